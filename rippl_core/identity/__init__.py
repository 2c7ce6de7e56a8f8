"""Identity from the team's identity provider (OpenID Connect / OAuth 2.1): who an agent or a
person is comes from a token its issuer signed, never from what a request says about itself.

- `issuer`: the issuer's metadata (discovery) and its signing keys (JWKS), fetched, cached and
  refreshed when a token names a key not seen yet (rotation).
- `keys`: which algorithms a published key verifies (pinned to the key; never `none`, never HMAC).
- `tokens`: the verification of a JWT against the issuer, the audience and the clock; every
  refusal says why and what to do.
- `roles`: the principal a verified token names (subject, client, scopes), and the roles
  (reviewer, proposer, reader) its groups claim gives it.

The MCP server (`rippl_core.mcp.auth`) verifies bearer access tokens with it; the review console
(`rippl_core.console.oidc`) signs people in with OpenID Connect and verifies their ID tokens and
monitors' access tokens with it. It needs PyJWT (with `cryptography`) and httpx, which the `mcp`
and `console` extras install.
"""
