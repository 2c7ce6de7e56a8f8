// A real OpenID provider on loopback for Rippl's identity tests: panva's oidc-provider (OpenID
// Certified), run by tests/helpers_oidc.py. Never a mock: the tests' tokens come from it, its
// discovery document, JWKS, login pages, dynamic client registration, client credentials and
// authorization code (PKCE) grants, resource indicators (RFC 8707) and userinfo are its own.
//
//   node provider.mjs CONFIG.json     prints "listening ISSUER" once it serves
//
// CONFIG: {"port": N, "accounts": {"ana": {"name": ..., "email": ..., "groups": [...]}},
//          "test_keys": [private JWKs], "unpublished": [kids]}
// The test keys join the provider's keystore (it never signs with them: their algorithms are
// none it uses) so that a test can sign deliberately bad tokens the provider's JWKS vouches for.
// POST /__test__/jwks?publish=KID&retire=KID changes which of them /jwks lists (a rotation).

import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = `http://127.0.0.1:${config.port}`;
const RIPPL_SCOPES = ['rippl:check', 'rippl:propose', 'rippl:review'];

function signingKey(type, options, alg, kid) {
  const { privateKey } = generateKeyPairSync(type, options);
  return { ...privateKey.export({ format: 'jwk' }), alg, kid, use: 'sig' };
}

const hidden = new Set(config.unpublished || []);
const accounts = config.accounts || {};

const provider = new Provider(issuer, {
  jwks: {
    keys: [
      signingKey('rsa', { modulusLength: 2048 }, 'RS256', 'provider-rs256'),  // ID tokens
      signingKey('ec', { namedCurve: 'P-256' }, 'ES256', 'provider-es256'),  // access tokens
      ...(config.test_keys || []),
    ],
  },
  cookies: { keys: ['rippl-tests-cookie-key-0123456789'] },
  claims: { openid: ['sub'], profile: ['name', 'groups'], email: ['email'] },
  scopes: ['openid', 'offline_access', 'profile', 'email', ...RIPPL_SCOPES],
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...account }; } };
  },
  features: {
    devInteractions: { enabled: true },  // the provider's own login and consent pages
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      // any loopback URL is a resource server of Rippl; a client gets the Rippl scopes its own
      // registration (`scope`) allows, and nothing else
      async getResourceServerInfo(ctx, resource, client) {
        if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(resource)) throw new errors.InvalidTarget();
        const allowed = new Set((client.scope || '').split(' '));
        return {
          scope: RIPPL_SCOPES.filter((s) => allowed.has(s)).join(' '),
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
  // a person's groups ride in their access tokens too (as a provider's claim mappers do)
  async extraTokenClaims(ctx, token) {
    const account = token.accountId && accounts[token.accountId];
    return account ? { groups: account.groups || [], name: account.name } : undefined;
  },
  ttl: { AccessToken: 300, ClientCredentials: 300, IdToken: 300, Grant: 600, Interaction: 600, Session: 600 },
});
provider.proxy = false;
provider.on('server_error', (ctx, error) => console.error('server_error', ctx.path, error));

provider.use(async (ctx, next) => {
  if (ctx.path === '/__test__/jwks' && ctx.method === 'POST') {
    for (const kid of ctx.query.publish ? [].concat(ctx.query.publish) : []) hidden.delete(kid);
    for (const kid of ctx.query.retire ? [].concat(ctx.query.retire) : []) hidden.add(kid);
    ctx.body = { unpublished: [...hidden] };
    return;
  }
  await next();
  if (ctx.path === '/jwks' && ctx.body && Array.isArray(ctx.body.keys)) {
    ctx.body = { keys: ctx.body.keys.filter((k) => !hidden.has(k.kid)) };
  }
});

const server = provider.listen(config.port, '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
