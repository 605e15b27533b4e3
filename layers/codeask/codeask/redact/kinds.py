"""The redaction marker, every kind of secret it can name, and counting markers a text carries."""

from __future__ import annotations

import re
from collections import Counter

REDACTED = "[REDACTED:{kind}]"
MARKER_PREFIX = REDACTED.split("{", 1)[0]

# Every kind a marker names, with what it covers. Tests hold each rule's kind to this table, and
# README's security section lists the same kinds and shapes.
KINDS: dict[str, str] = {
    # keys and whole blocks
    "private-key": "PEM private-key blocks, every line (also when a read starts mid-block); keys "
    "escaped on one line (service-account JSON); keys stored base64-encoded, on one line or wrapped",
    # cloud providers
    "aws-access-key": "AKIA/ASIA/ABIA/ACCA/A3T* access key ids",
    "aws-secret-key": "40-character secrets assigned to aws_secret_access_key / SecretAccessKey",
    "azure-storage-key": "AccountKey= and SharedAccessKey= in Azure connection strings",
    "azure-sas-token": "the sig= signature of an Azure shared-access-signature URL",
    "google-api-key": "AIza… API keys",
    "digitalocean-token": "dop_v1_/doo_v1_/dor_v1_ tokens",
    "heroku-key": "HRKU-AA… API keys, and UUID keys assigned to a heroku-named key",
    "vault-token": "HashiCorp Vault hvs./hvb./hvr. tokens",
    "terraform-token": "Terraform Cloud / Enterprise ….atlasv1.… API tokens",
    # code hosting and package registries
    "github-token": "ghp_/gho_/ghu_/ghs_/ghr_ tokens and github_pat_ fine-grained tokens",
    "gitlab-token": "glpat-/gldt-/glrt-/glptt-/glsoat-/glcbt-/glft-/gloas- tokens",
    "atlassian-token": "ATATT3… Atlassian API tokens",
    "npm-token": "npm_ access tokens",
    "pypi-token": "pypi-AgEIcHlwaS5vcmc… upload tokens",
    "rubygems-token": "rubygems_ API keys",
    "artifactory-key": "AKCp… JFrog Artifactory API keys",
    # messaging, mail and payments
    "slack-token": "xoxb-/xoxp-/xoxa-/xoxr-/xoxs-/xoxe-/xoxo- tokens and xapp- app tokens",
    "slack-webhook": "https://hooks.slack.com/{services,workflows,triggers}/… URLs",
    "discord-webhook": "https://discord.com/api/webhooks/… URLs",
    "teams-webhook": "https://….webhook.office.com/webhookb2/… URLs",
    "twilio-key": "SK… API key SIDs (the auth token is caught as an assignment)",
    "sendgrid-key": "SG.….… API keys",
    "sendinblue-key": "xkeysib-… (Brevo) API keys",
    "mailgun-key": "key-… private API keys",
    "stripe-key": "sk_/rk_ live, test and prod keys",
    "square-token": "sq0atp-/sq0csp- tokens and secrets",
    "shopify-token": "shpat_/shpca_/shppa_/shpss_ tokens and shared secrets",
    # AI and SaaS APIs
    "anthropic-key": "sk-ant-… API and admin keys",
    "openai-key": "sk-…, sk-proj-…, sk-svcacct-…, sk-admin-… keys",
    "huggingface-token": "hf_… access tokens",
    "databricks-token": "dapi… tokens",
    "sentry-token": "sntrys_/sntryu_ tokens",
    "grafana-token": "glsa_ service-account and glc_ cloud tokens",
    "notion-token": "ntn_… integration tokens",
    "pulumi-token": "pul-… access tokens",
    "doppler-token": "dp.pt./dp.st./dp.sa./dp.ct. tokens",
    "age-secret-key": "AGE-SECRET-KEY-1… age encryption keys",
    "jwt": "JSON web tokens (three base64url segments, the first two starting eyJ)",
    # credentials by shape
    "basic-auth": "Authorization: Basic <user:password in base64>, curl -u user:password, and "
    "Docker config auths (decoded to check they hold user:password)",
    "url-password": "the password in scheme://user:password@host",
    "kubernetes-secret": "every value under data: / stringData: of a Kubernetes kind: Secret, "
    "however far below the kind: line",
    "unscanned": "every line of a file whose whole-file pass failed: withheld, never shown "
    "unscanned (fail closed)",
    "secret-assignment": "a literal assigned to a secret-named key (password, passwd, pass, pwd, "
    "secret, token, credential(s), auth, api/access/private/client/signing/… key) in YAML, INI, "
    "TOML, .properties, .env, Dockerfile ENV/ARG, shell export, Makefile, HCL/Terraform, JSON, "
    "XML and code; values continued with a backslash; env name/value pairs and variable "
    "defaults; the value a config-setting command gives a secret-named key or auth header "
    "(npm/yarn/pnpm config set, git config, aws configure set, poetry/composer config); the "
    "password of a .pgpass entry; this is also how keys without a telltale shape are caught (Datadog DD_API_KEY / "
    "DD_APP_KEY, Twilio and Telegram tokens, Mailchimp, New Relic, Linear, Google OAuth and "
    "Entra ID client secrets, Stripe webhook secrets) when held under their usual names",
}

_MARKER = re.compile(re.escape(MARKER_PREFIX) + r"([a-z0-9-]+)\]")


def marker(kind: str) -> str:
    return REDACTED.format(kind=kind)


# Kinds masked line by line: a run of such lines is one secret (a key block, a withheld file).
_WHOLE_LINE_KINDS = frozenset({"private-key", "unscanned"})


def count_markers(text: str) -> Counter[str]:
    """Markers already in a text (a file masked before any slice of it was shown), one count per
    marker, except that kinds masked line by line count once per run of lines."""
    counts: Counter[str] = Counter()
    if MARKER_PREFIX not in text:
        return counts
    line = 0
    last_line: dict[str, int] = {}
    pos = 0
    for m in _MARKER.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        kind = m.group(1)
        if kind not in _WHOLE_LINE_KINDS or line - last_line.get(kind, -2) > 1:
            counts[kind] += 1
        last_line[kind] = line
    return counts
