"""A canary set of secrets in the shapes real providers and tools use, with fake values.

Each canary is ``name -> (text that carries it, the secret itself)``. The values are assembled at run
time (prefix + body) so no key-shaped literal sits in the repository, and each secret is unique so a
search of every byte ctxhealth wrote can tell which one leaked.
"""

from __future__ import annotations

BODY = "Zq7X" + "r2Lm9Tb4Kw8Np3Vd6Hs1Jc5Fg0"  # 28 mixed characters
HEX32 = "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a90"


def _mix(tag: str, length: int) -> str:
    """A mixed-case alphanumeric body of ``length`` characters, unique per ``tag``."""
    base = (tag.upper() + "7" + BODY + tag.lower() + "3" + BODY[::-1]) * 4
    return base[:length]


def _hex(tag: str) -> str:
    digits = "".join(f"{ord(c) % 16:x}" for c in tag)
    return (digits + HEX32)[:32]


def canaries() -> dict[str, tuple[str, str]]:
    """Every canary by name: (text containing the secret, the secret)."""
    anthropic = "sk-" + "ant-api03-" + _mix("an", 40) + "_-" + _mix("th", 20)
    openai_proj = "sk-" + "proj-" + _mix("op", 48)
    openai_legacy = "sk-" + _mix("ol", 20) + "T3Blbk" + "FJ" + _mix("lg", 20)
    aws_id = "AKIA" + "Q3EXAMPLE7Z2WX4Y"
    aws_secret = "wJalr" + "XUtnFEMI/K7MDENG/bPxRfiCY" + "Q3CANARYK"
    aws_pair_secret = "pQ9s" + "Tu2VwXyZ/aB3cD4eF5gH6iJ7kL8mN9oP0qR1"
    pem_body = "MIIEpAIBAAKCAQEA" + _mix("pk", 40) + "\n" + _mix("pe", 40) + "==\n"
    pem = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + pem_body + "-----END RSA PRIVATE KEY-----"
    pem_cut_body = "MIIEvQIBADANBgkq" + _mix("cu", 44)
    pem_cut = "-----BEGIN " + "PRIVATE KEY-----\n" + pem_cut_body
    jwt = "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0." + _mix("jw", 30)
    discord = "MTk4NjIy" + "NDgzNDcxOTI1MjQ4" + "." + "Cl2FMQ" + "." + _mix("dc", 27)
    values = {
        "anthropic": (f"export ANTHROPIC_KEY_VALUE {anthropic} now", anthropic),
        "openai-proj": (f"client = OpenAI(key='{openai_proj}')", openai_proj),
        "openai-legacy": (f"using {openai_legacy} for the call", openai_legacy),
        "aws-access-key-id": (f"AWS id {aws_id} in config", aws_id),
        "aws-secret-assigned": (f"aws_secret_access_key = {aws_secret}", aws_secret),
        "aws-secret-after-id": (f"User,AKIAQ3EXAMPLE7Z2PAIR,{aws_pair_secret}\n", aws_pair_secret),
        "github-classic": (
            f"git clone https://{'ghp' + '_' + _mix('gh', 36)}@github.com/x/y",
            _mix("gh", 36),
        ),
        "github-fine": (f"token is {'github' + '_pat_' + '11ABCDEFG0' + _mix('gf', 60)}.", _mix("gf", 60)),
        "gitlab": (f"GL token: {'gl' + 'pat-' + _mix('gl', 20)} for CI", _mix("gl", 20)),
        "slack-bot": (f"slack: {'xox' + 'b-' + '1234567890-0987654321-' + _mix('sl', 24)}", _mix("sl", 24)),
        "slack-webhook": (
            "POST https://hooks.slack.com/services/T0123ABCD/B0456EFGH/" + _mix("sw", 24),
            _mix("sw", 24),
        ),
        "stripe-secret": (f"stripe.api_key_value = {'sk' + '_live_' + _mix('st', 24)}", _mix("st", 24)),
        "stripe-restricted": (f"use {'rk' + '_live_' + _mix('rk', 24)} here", _mix("rk", 24)),
        "google": (f"maps?key={'AI' + 'za' + 'Sy' + _mix('go', 33)}&q=1", _mix("go", 33)),
        "npm": (f"//registry/:_authToken {'npm' + '_' + _mix('np', 36)}", _mix("np", 36)),
        "hugging-face": (f"login with {'hf' + '_' + _mix('hf', 34)} then", _mix("hf", 34)),
        "sendgrid": (
            f"mail key {'SG' + '.' + _mix('sg', 22) + '.' + _mix('gr', 43)} ok",
            _mix("sg", 22) + "." + _mix("gr", 43),
        ),
        "sendgrid-env-code-like": ("SENDGRID_API_KEY=" + "SG.abCdEf.ghIj9", "SG.abCdEf.ghIj9"),
        "twilio-api-key": (f"twilio key {'SK' + _hex('tw')}", _hex("tw")),
        "twilio-auth-token": (f"TWILIO_AUTH_TOKEN={_hex('ta')}", _hex("ta")),
        "twilio-basic": (f"curl -u AC{_hex('ac')}:{_hex('tt')} https://api", _hex("tt")),
        "discord": (f"bot.run('{discord}')", discord),
        "azure-account-key": (
            f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={_mix('az', 40)}==;"
            "EndpointSuffix=core.windows.net",
            _mix("az", 40),
        ),
        "azure-sas-key": (
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;"
            f"SharedAccessKey={_mix('sb', 43)}=",
            _mix("sb", 43),
        ),
        "jwt": (f"cookie session={jwt}; path=/", jwt),
        "pem": (f"key file:\n{pem}\nend", pem_body.strip()),
        "pem-cut-short": (f'{{"excerpt": "{pem_cut}', pem_cut_body),
        "bearer-header": (f"Authorization: Bearer {'Be' + _mix('be', 30)}", "Be" + _mix("be", 30)),
        "bearer-lowercase-curl": (
            f'curl -H "authorization: bearer {_mix("bl", 30)}" https://api',
            _mix("bl", 30),
        ),
        "bearer-uppercase": (f"AUTHORIZATION: BEARER {_mix('bu', 30)}", _mix("bu", 30)),
        "basic-header": (f"Authorization: Basic {_mix('ba', 24)}==", _mix("ba", 24)),
        "url-credentials-postgres": ("postgres://admin:" + "Pa55word9Q" + "@db:5432/app", "Pa55word9Q"),
        "url-credentials-mongodb-srv": (
            "mongodb+srv://svc:" + "Mg0Pass7Zx" + "@cluster0.x.net",
            "Mg0Pass7Zx",
        ),
        "url-credentials-amqp": ("amqp://guest:" + "R4bbitPw2x" + "@mq:5672/", "R4bbitPw2x"),
        "password-equals": ("db password=" + "hunter2!xQ", "hunter2!xQ"),
        "password-colon-yaml": ("database:\n  password: " + "Yaml9Pass!", "Yaml9Pass!"),
        "passwd": ("ftp passwd: " + "Pwd0Value7", "Pwd0Value7"),
        "password-in-prose": ("ok, the password is " + "Tr0ub4dor&3x" + " for staging", "Tr0ub4dor&3x"),
        "curl-user": ("curl -u deploy:" + "CurlPa55w0rd" + " https://x", "CurlPa55w0rd"),
        "mysql-p": ("mysql -u root -p" + "My5qlSecret" + " app < dump.sql", "My5qlSecret"),
        "export-name-token": ("export DEPLOY_TOKEN=" + "dT0kenValue9", "dT0kenValue9"),
        "env-token-not-at-end": ("GITHUB_TOKEN_RO=" + "roT0ken5Val" + " make", "roT0ken5Val"),
        "json-client-secret": ('{"client_secret": "' + "zzSecretValue99" + '"}', "zzSecretValue99"),
        "api-key-assignment": ("api_key=" + "q8w7e6r5t4y3", "q8w7e6r5t4y3"),
    }
    # a random value under a name that only hints at a secret (detect-secrets' high-entropy strings)
    values["high-entropy-hex-pw"] = (
        'cl_pw = "' + _hex("cp") + _hex("cq")[:16] + '"',
        _hex("cp") + _hex("cq")[:16],
    )
    values["high-entropy-iam-key"] = ("ibm_cloud_key: " + _mix("ib", 44), _mix("ib", 44))
    values["high-entropy-auth-json"] = ('{"auth": "' + _mix("au", 32) + '"}', _mix("au", 32))
    values.update({f"bare {name}": (token, token) for name, token in bare_tokens().items()})
    values["aws-secret-prose"] = (
        "aws_secret " + "wJalr" + _mix("ap", 30) + "KEY9",
        "wJalr" + _mix("ap", 30) + "KEY9",
    )
    values["cookie-header"] = ("Cookie: sessionid=" + _mix("ck", 24) + "; csrftoken=x", _mix("ck", 24))
    values["redis-no-user"] = (
        "redis://:" + "R3disPw9" + _mix("rd", 8) + "@cache:6379/0",
        "R3disPw9" + _mix("rd", 8),
    )
    values["azure-sas-url"] = (
        "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2030&sp=r&sig=" + _mix("sa", 40) + "%3D",
        _mix("sa", 40),
    )
    values["sentry-dsn"] = (
        "SENTRY_DSN_URL https://" + _hex("se") + "@o12345.ingest.sentry.io/678",
        _hex("se"),
    )
    return values


def bare_tokens() -> dict[str, str]:
    """Every key format with a shape of its own, as the bare token (no name, no prose around it):
    the redaction rule alone must catch it."""
    bech32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()
    return {
        "anthropic": "sk-" + "ant-api03-" + _mix("ba", 40),
        "openai-proj": "sk-" + "proj-" + _mix("bo", 48),
        "aws-access-key-id": "AKIA" + "Z7BARE5EXAMPLE2Q",
        "github-classic": "ghp" + "_" + _mix("bg", 36),
        "github-fine": "github" + "_pat_" + "11ABCDEFG0" + _mix("bf", 60),
        "gitlab": "gl" + "pat-" + _mix("bl", 20),
        "slack-bot": "xox" + "b-" + "1234567890-0987654321-" + _mix("bs", 24),
        "stripe-secret": "sk" + "_live_" + _mix("bt", 24),
        "google-api": "AI" + "za" + "Sy" + _mix("bz", 33),
        "google-oauth-secret": "GOC" + "SPX-" + _mix("gc", 28),
        "google-oauth-token": "ya" + "29." + _mix("ya", 60),
        "npm": "npm" + "_" + _mix("bn", 36),
        "hugging-face": "hf" + "_" + _mix("bh", 34),
        "pypi": "pypi" + "-AgEIcHlwaS5vcmc" + _mix("py", 60),
        "docker": "dckr" + "_pat_" + _mix("dk", 27),
        "digitalocean": "dop" + "_v1_" + (_hex("do") * 2),
        "vault": "hvs" + "." + _mix("hv", 90),
        "age": "AGE-SECRET" + "-KEY-1" + (bech32 * 2)[:58],
        "mailgun": "key" + "-" + _hex("mg"),
        "shopify": "shp" + "at_" + _hex("sh"),
        "databricks": "da" + "pi" + _hex("db"),
        "telegram": "1234567" + "890:AA" + _mix("tg", 33),
        "discord-webhook": "https://discord.com/api/webhooks/" + "123456789012345678/" + _mix("dw", 68),
        "sentry-token": "sntry" + "s_" + _mix("sn", 60),
        "jwt": "ey" + "JhbGciOiJIUzI1NiJ9." + "ey" + "JzdWIiOiJiYXJlIn0." + _mix("bj", 30),
        "discord": "MTk4NjIy" + "NDgzNDcxOTI1MjQ5" + "." + "Cl2FMQ" + "." + _mix("bd", 27),
        "sendgrid": "SG" + "." + _mix("bq", 22) + "." + _mix("br", 43),
        "twilio-api-key": "SK" + _hex("bw"),
        # formats of detect-secrets' plugin list we did not recognise before
        "mailchimp": _hex("mc") + "-us" + "14",
        "square-oauth-secret": "sq0" + "csp-" + _mix("sq", 43),
        "square-access-token": "sq0" + "atp-" + _mix("sx", 22),
        "artifactory": "AKC" + "p" + _mix("af", 69),
        "softlayer-url": "https://api.softlayer.com/soap/v3/" + _hex("sl") + _hex("sm"),
    }
