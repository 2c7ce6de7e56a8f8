"""`rippl serve`'s identity provider options, refused before anything is opened or served when
they cannot work, each saying what to do; and the configuration they make."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rippl_core.cli import app
from rippl_core.cli.serve import oidc_of
from rippl_core.identity.roles import RoleMap

runner = CliRunner()
ISSUER = "https://login.example.com/realms/rippl"


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--oidc-client-id", "rippl-console"], {}, "go with --oidc-issuer"),
    (["--oidc-issuer", ISSUER], {}, "needs --oidc-client-id"),
    (["--oidc-issuer", ISSUER, "--oidc-client-id", "c", "--oidc-client-secret-file",
      "/nonexistent/secret"], {}, "cannot read the client secret file /nonexistent/secret"),
    (["--oidc-issuer", ISSUER, "--oidc-client-id", "c", "--oidc-scope", "profile"], {},
     "must include openid"),
    (["--oidc-issuer", "http://login.example.com", "--oidc-client-id", "c"], {}, "plain http"),
    (["--oidc-issuer", ISSUER, "--oidc-client-id", "c", "--public-url", "ftp://rippl"], {},
     "absolute URL"),
    (["--oidc-issuer", ISSUER, "--oidc-client-id", "c"],
     {"RIPPL_PROPOSERS": "scanner: scanner-token-0123456789"}, "leave out --reviewers"),
])
def test_what_cannot_work_is_refused_before_anything_starts(args: list[str], env: dict[str, str],
                                                            message: str) -> None:
    result = runner.invoke(app, ["--db", "/nonexistent/never/created.db", "serve", *args], env=env)
    assert result.exit_code == 2, result.output  # a usage error
    assert message in " ".join(result.output.split())
    assert not Path("/nonexistent").exists()


def test_the_configuration_the_options_make(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret-from-the-file\n", encoding="utf-8")
    roles = RoleMap(claim="realm_access.roles", reviewer="approver")
    config = oidc_of(ISSUER, "rippl-console", secret, "s3cret-from-the-environment",
                     ["openid profile", "groups"], roles, "https://rippl.example.com/")
    assert (config.issuer, config.client_id, config.client_secret, config.scopes, config.roles,
            config.public_url) == (ISSUER, "rippl-console", "s3cret-from-the-file",
                                   ("openid", "profile", "groups"), roles, "https://rippl.example.com/")
    public = oidc_of(ISSUER, "rippl-console", None, None, [], RoleMap(), None)
    assert (public.client_secret, public.scopes) == (None, ("openid", "profile", "email"))
    assert oidc_of(ISSUER, "c", None, "from-the-env", [], RoleMap(), None).client_secret == "from-the-env"
    assert oidc_of(None, None, None, "ignored", ["openid"], RoleMap(), None) is None
