"""Whole-file masking: secrets in config and build files, judged with the whole file and its path."""

from __future__ import annotations

import base64
import json
import random

import pytest

from codeask.redact import REDACTED, mask_file, scan
from codeask.redact.files import config_syntax
from conftest import shown_by_tools

# Fake secrets are assembled at runtime so this file holds no secret-shaped literal.
HUMAN = "Tr0ub4dor" + "-and-3"  # a human-chosen password with digits and a symbol
ALPHA = "sunshine" + "lollipop"  # letters only: a real password all the same
RANDOM = "Xk9f" + "j2Lq8mZp" + "4Rt7"  # a machine-made token
AWS_KEY_ID = "AKIA" + "QWERTYUIOP" + "ASDFGH"


def marker(kind: str) -> str:
    return REDACTED.format(kind=kind)


def mask(path: str, text: str) -> tuple[list[str], dict[str, int]]:
    """mask_file over `text` split into lines, checked to keep every line."""
    lines = text.split("\n")
    out, counts = mask_file(lines, path)
    assert len(out) == len(lines)
    return out, counts


def assert_masked(out: list[str], original: str, secrets: list[str], kind: str) -> None:
    """Every secret is gone, each masked line names `kind`, and no other line changed."""
    joined = "\n".join(out)
    for secret in secrets:
        assert secret not in joined, secret
    for before, after in zip(original.split("\n"), out, strict=True):
        if any(s in before for s in secrets):
            assert marker(kind) in after, (before, after)
        else:
            assert after == before


# --- Config languages, each with its assignment forms ----------------------------------------

POSITIVES = [
    # YAML: unquoted, quoted, indented, list items, comments after, flow maps, any case
    pytest.param("config/app.yaml", f"db:\n  host: db\n  password: {HUMAN}\n", id="yaml-bare"),
    pytest.param("config/app.yml", f"db:\n    db_password: {ALPHA}\n", id="yaml-letters-only"),
    pytest.param("deploy/values.yaml", f"users:\n  - password: {HUMAN}\n", id="yaml-list-item"),
    pytest.param("config/app.yaml", f"password: '{HUMAN}'\n", id="yaml-single-quoted"),
    pytest.param("config/app.yaml", f'password: "{HUMAN}"\n', id="yaml-double-quoted"),
    pytest.param("config/app.yaml", f"Password: {HUMAN}  # rotated in May\n", id="yaml-comment"),
    pytest.param(
        "config/app.yaml", f"POSTGRES_PASSWORD: {ALPHA}\r\nport: 5432\r\n", id="yaml-crlf"
    ),
    pytest.param("docker-compose.yml", f"env:\n  - DB_PASSWORD={HUMAN}\n", id="yaml-compose-env"),
    pytest.param("config/app.yaml", f"db: {{user: app, password: {HUMAN}}}\n", id="yaml-flow-map"),
    pytest.param("config/app.yaml", f"api_token: {RANDOM}\n", id="yaml-token"),
    pytest.param("config/app.yaml", f"dbcreds: {RANDOM}\n", id="yaml-creds"),
    pytest.param("config/app.ini", f"[db]\npassword = #{HUMAN}\n", id="ini-hash-first"),
    pytest.param("config/app.yaml", f"pass: correct horse {ALPHA}\n", id="yaml-passphrase"),
    pytest.param("config/app.yaml", f"password: Hd7#{ALPHA}\n", id="yaml-hash-in-value"),
    pytest.param("config/app.yaml", f'"db_password": {ALPHA}\n', id="yaml-quoted-key"),
    # INI, TOML and .properties
    pytest.param("config/app.ini", f"[db]\nhost = db\npassword = {HUMAN}\n", id="ini-spaces"),
    pytest.param("setup.cfg", f"[upload]\npassword={ALPHA}\n", id="ini-tight"),
    pytest.param("db.conf", f"[client]\nPassword : {HUMAN}\n", id="ini-colon"),
    pytest.param("my.cnf", f"[mysql]\n    pass = {HUMAN} ; old one\n", id="ini-indented-comment"),
    pytest.param("pyproject.toml", f'[db]\npassword = "{HUMAN}"\n', id="toml-quoted"),
    pytest.param("config/app.ini", f"secret_key = {RANDOM}\r\n", id="ini-crlf"),
    pytest.param(
        "src/main/resources/application.properties",
        f"spring.datasource.password={HUMAN}\n",
        id="properties",
    ),
    pytest.param("app.properties", f"db.password = {ALPHA}\n", id="properties-spaces"),
    pytest.param("app.properties", f"keystore.password:{HUMAN}\n", id="properties-colon"),
    pytest.param("app.properties.example", f"jwt.secret={RANDOM}\n", id="properties-example"),
    # .env style
    pytest.param("config/app.env.sample", f"DB_PASSWORD={HUMAN}\n", id="env"),
    pytest.param("env.example", f'export API_TOKEN="{RANDOM}"\n', id="env-export"),
    pytest.param("deploy/.env.production.dist", f"SECRET_KEY='{RANDOM}'\n", id="env-quoted"),
    pytest.param("config/app.env.sample", f"DB_PASSWORD={ALPHA}\n", id="env-letters-only"),
    # Dockerfile ENV / ARG
    pytest.param("Dockerfile", f"FROM python:3.13\nENV DB_PASSWORD={HUMAN}\n", id="docker-env"),
    pytest.param("Dockerfile", f"ENV DB_PASSWORD {HUMAN}\n", id="docker-env-legacy"),
    pytest.param("Dockerfile", f"ENV NPM_TOKEN {RANDOM}\n", id="docker-env-legacy-token"),
    pytest.param("build/api.dockerfile", f"ARG NPM_TOKEN={RANDOM}\n", id="docker-arg"),
    pytest.param(
        "Dockerfile.prod", f"ENV LANG=C.UTF-8 DB_PASSWORD={HUMAN}\n", id="docker-env-pairs"
    ),
    pytest.param("Containerfile", f"env DB_PASSWORD={ALPHA}\n", id="docker-lowercase"),
    # shell
    pytest.param("scripts/deploy.sh", f"export X_TOKEN={RANDOM}\n", id="sh-export"),
    pytest.param("scripts/deploy.sh", f'X_TOKEN="{RANDOM}"\n', id="sh-quoted"),
    pytest.param("scripts/deploy.bash", f"declare -x DB_PASSWORD={HUMAN}\n", id="sh-declare"),
    pytest.param("scripts/run.sh", f"f() {{\n  local password='{HUMAN}'\n}}\n", id="sh-local"),
    pytest.param(".bashrc", f"readonly API_KEY={RANDOM}\n", id="sh-readonly"),
    pytest.param("scripts/run.sh", f"FOO=1 DB_PASSWORD={HUMAN} ./server\n", id="sh-inline-env"),
    # Makefile
    pytest.param("Makefile", f"DB_PASSWORD ?= {ALPHA}\nrun:\n\t./run\n", id="make"),
    # HCL / Terraform
    pytest.param("main.tf", f'resource "x" "y" {{\n  password = "{HUMAN}"\n}}\n', id="hcl"),
    pytest.param(
        "infra/db.tf",
        f'resource "aws_db_instance" "db" {{\n  master_password = "{ALPHA}"\n}}\n',
        id="hcl-master-password",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("path", "text"), POSITIVES)
def test_secret_in_a_config_file_is_masked_on_its_own_line(path: str, text: str) -> None:
    # Given a config or build file with a secret assigned in that language's syntax
    secret = next(s for s in (HUMAN, ALPHA, RANDOM) if s in text)

    # When the whole file is masked
    out, counts = mask(path, text)

    # Then the value is gone, its line says so, and every other line is untouched
    assert_masked(out, text, [secret], "secret-assignment")
    assert counts == {"secret-assignment": 1}


NEGATIVES = [
    pytest.param("config/app.yaml", 'password: ""\n', id="yaml-empty-quotes"),
    pytest.param("config/app.yaml", "password: ''\n", id="yaml-empty-single"),
    pytest.param("config/app.yaml", "password:\n  min_length: 12\n", id="yaml-nested"),
    pytest.param("config/app.yaml", "password: ${DB_PASSWORD}\n", id="yaml-env-reference"),
    pytest.param("config/app.yaml", 'password: "{{ .Values.db.password }}"\n', id="yaml-helm"),
    pytest.param("config/app.yaml", "password: '{{ vault_db_password }}'\n", id="yaml-jinja"),
    pytest.param("config/app.yaml", "password: changeme\n", id="yaml-placeholder"),
    pytest.param("config/app.yaml", "password: <your-password>\n", id="yaml-angle-placeholder"),
    pytest.param("config/app.yaml", "password: !Ref DbPassword\n", id="yaml-cfn-tag"),
    pytest.param("config/app.yaml", "password: *db_password\n", id="yaml-alias"),
    pytest.param("config/app.yaml", "password_min_length: 12\n", id="yaml-meta-name"),
    pytest.param("config/app.yaml", "passwordPolicy: strict\n", id="yaml-policy"),
    pytest.param("config/app.yaml", "password_file: /run/secrets/db\n", id="yaml-path"),
    pytest.param("config/app.yaml", "password: ./secrets/db.txt\n", id="yaml-relative-path"),
    pytest.param("config/app.yaml", f"sort_key: {RANDOM}\n", id="yaml-ordinary-key"),
    pytest.param("config/app.yaml", "token_url: https://auth.example.com/token\n", id="yaml-url"),
    pytest.param("config/app.yaml", "secretName: db-credentials\n", id="yaml-secret-name"),
    pytest.param("config/app.yaml", "auth: true\nauth_method: password\n", id="yaml-flags"),
    pytest.param("config/app.yaml", "# the password: must be rotated yearly\n", id="yaml-prose"),
    pytest.param(
        "config/app.yaml", "help: set the password: then restart\n", id="yaml-prose-value"
    ),
    pytest.param(
        "deploy/app.yaml",
        "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n"
        "        name: db\n        key: password\n",
        id="yaml-secret-ref",
    ),
    pytest.param("config/app.ini", "[db]\npassword =\n", id="ini-empty"),
    pytest.param("config/app.ini", "[db]\npassword = %(db_password)s\n", id="ini-interpolation"),
    pytest.param("config/app.ini", "min_password_length = 12\n", id="ini-meta-name"),
    pytest.param(
        "app.properties", "spring.datasource.password=${DB_PASSWORD}\n", id="properties-ref"
    ),
    pytest.param("app.properties", "password.policy=strict\n", id="properties-policy"),
    pytest.param("config/app.env.sample", "DB_PASSWORD=\n", id="env-empty"),
    pytest.param("config/app.env.sample", "DB_PASSWORD=your-password-here\n", id="env-example"),
    pytest.param("config/app.env.sample", "DB_PASSWORD=${VAULT_PW}\n", id="env-reference"),
    pytest.param("Dockerfile", "ARG NPM_TOKEN\n", id="docker-arg-no-default"),
    pytest.param("Dockerfile", "ENV LANG C.UTF-8\n", id="docker-env-legacy-ordinary"),
    pytest.param("Dockerfile", "ENV DB_PASSWORD=${DB_PASSWORD}\n", id="docker-ref"),
    pytest.param(
        "Dockerfile", "RUN --mount=type=secret,id=npm_token npm ci\n", id="docker-mount-secret"
    ),
    pytest.param("Dockerfile", "ENV PASSWORD_FILE=/run/secrets/db\n", id="docker-file"),
    pytest.param(
        "scripts/deploy.sh",
        "export X_TOKEN=$(vault read -field=token secret/x)\n",
        id="sh-command-substitution",
    ),
    pytest.param("scripts/deploy.sh", 'PASSWORD="$1"\n', id="sh-argument"),
    pytest.param("scripts/deploy.sh", "PASSWORD=${PASSWORD:-}\n", id="sh-default-empty"),
    pytest.param("scripts/deploy.sh", 'read -rs PASSWORD\necho "password: set"\n', id="sh-read"),
    pytest.param("main.tf", "password = var.db_password\n", id="hcl-variable"),
    pytest.param("main.tf", "password = random_password.db.result\n", id="hcl-resource"),
    pytest.param(
        "main.tf",
        'variable "db_password" {\n  type      = string\n  sensitive = true\n}\n',
        id="hcl-variable-without-default",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("path", "text"), NEGATIVES)
def test_config_lines_that_hold_no_secret_are_left_alone(path: str, text: str) -> None:
    # Given config that only names, references or describes a secret
    # When the whole file is masked
    out, counts = mask(path, text)

    # Then every line comes back as it was
    assert out == text.split("\n")
    assert counts == {}


def test_a_legacy_env_value_is_masked_whole_whatever_letter_frames_it() -> None:
    # Given `ENV NAME value` whose value starts and ends with the same letter (only a quote
    # pair around a value is syntax)
    token = "X" + RANDOM + "X"
    out, counts = mask("Dockerfile", f"ENV NPM_TOKEN {token}\nENV B_TOKEN '{RANDOM}'")

    # Then the unquoted value is masked whole, the quoted one inside its quotes
    assert out == [f"ENV NPM_TOKEN {marker('secret-assignment')}",
                   f"ENV B_TOKEN '{marker('secret-assignment')}'"]  # fmt: skip
    assert counts == {"secret-assignment": 2}


def test_the_same_line_in_code_is_judged_as_code() -> None:
    # Given `password = <word>` in Python, where a bare word is a variable, and in INI
    python_line = "password = s3cr3tPassw0rd"

    # When each file is masked
    py, _ = mask("src/settings.py", python_line)
    ini, _ = mask("config/settings.ini", python_line)

    # Then only the INI line is masked: the path decides the language
    assert py == [python_line]
    assert ini == ["password = " + marker("secret-assignment")]


@pytest.mark.parametrize(
    ("path", "syntax"),
    [
        ("a/b/values.yaml", "yaml"),
        ("compose.YML", "yaml"),
        ("setup.cfg", "ini"),
        ("app.properties.example", "ini"),
        ("Cargo.toml", "ini"),
        ("Dockerfile", "dockerfile"),
        ("docker/Dockerfile.dev", "dockerfile"),
        ("api.dockerfile", "dockerfile"),
        ("Makefile", "make"),
        ("rules.mk", "make"),
        ("ops/run.sh", "shell"),
        (".env.local.sample", "shell"),
        ("prod.env", "shell"),
        ("infra/main.tf", "hcl"),
        ("job.nomad", "hcl"),
        ("src/app.py", None),
        ("README.md", None),
        ("package.json", None),
        ("example", None),
    ],
)
def test_the_path_names_the_config_language(path: str, syntax: str | None) -> None:
    assert config_syntax(path) == syntax


# --- Values named on another line ----------------------------------------------------------------

OWNED = [
    pytest.param(
        "k8s/deploy.yaml",
        f"env:\n  - name: DB_PASSWORD\n    value: {HUMAN}\n  - name: DB_HOST\n    value: db\n",
        id="k8s-env-pair",
    ),
    pytest.param(
        "k8s/deploy.yaml",
        f'env:\n- name: "API_TOKEN"\n  value: "{RANDOM}"\n',
        id="k8s-env-quoted",
    ),
    pytest.param(
        "cfn/db.yaml",
        f"Parameters:\n  DbPassword:\n    Type: String\n    NoEcho: true\n    Default: {HUMAN}\n",
        id="cloudformation-default",
    ),
    pytest.param(
        "vars.tf",
        f'variable "db_password" {{\n  type      = string\n  default   = "{HUMAN}"\n}}\n',
        id="terraform-variable-default",
    ),
    pytest.param(
        "ecs.tf",
        f'environment = [\n  {{\n    name  = "DB_PASSWORD"\n    value = "{ALPHA}"\n  }}\n]\n',
        id="terraform-name-value",
    ),
    pytest.param(
        "pipeline.yaml",
        f"params:\n  - default: {RANDOM}\n    name: api_token\n  - name: region\n",
        id="list-item-named-below",
    ),
]


@pytest.mark.parametrize(("path", "text"), OWNED)
def test_a_value_named_by_the_line_above_is_masked(path: str, text: str) -> None:
    # Given a value whose secret name sits on a neighbouring line, not its own
    secret = next(s for s in (HUMAN, ALPHA, RANDOM) if s in text)

    # When the whole file is masked
    out, counts = mask(path, text)

    # Then the value is masked and its neighbours are not
    assert_masked(out, text, [secret], "secret-assignment")
    assert counts == {"secret-assignment": 1}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            f"params:\n  - default: {RANDOM}\n  - name: api_token\n    default: eu-west-1\n",
            id="next-list-items-name",
        ),
        pytest.param(
            f"params:\n  - name: region\n    default: {RANDOM}\n  - name: api_token\n",
            id="own-name-is-ordinary",
        ),
        pytest.param(
            f"Parameters:\n  DbPassword:\n    Type: String\n  Region:\n    Default: {RANDOM}\n",
            id="previous-mappings-name",
        ),
    ],
)
def test_a_value_is_not_named_by_a_neighbour_outside_its_own_mapping(text: str) -> None:
    # Given a default whose own mapping or list item names nothing secret, beside one that does
    # When the whole file is masked
    out, counts = mask("pipeline.yaml", text)

    # Then it is shown as written
    assert out == text.split("\n")
    assert counts == {}


@pytest.mark.parametrize(
    ("path", "text", "masked"),
    [
        pytest.param(
            "config/app.ini",
            f"[db]\npassword =\n    {HUMAN}\n    {ALPHA}\nhost = db\n",
            [2, 3],
            id="ini-multi-line-value",
        ),
        pytest.param(
            "config/app.yaml",
            f"db:\n  password: |\n    {HUMAN}\n\n    {ALPHA}\n  host: db\n",
            [2, 4],
            id="yaml-block-scalar",
        ),
        pytest.param(
            "config/app.yaml",
            f"signing_secret: >-\n  {RANDOM}\n  {RANDOM[::-1]}\nname: x\n",
            [1, 2],
            id="yaml-folded-scalar",
        ),
    ],
)
def test_a_secret_continued_on_indented_lines_is_masked_line_by_line(
    path: str, text: str, masked: list[int]
) -> None:
    # Given a secret-named key whose value runs on over the more-indented lines below it
    # When the file is masked
    out, _ = mask(path, text)

    # Then exactly those lines are masked, keeping their indentation
    for i, (before, after) in enumerate(zip(text.split("\n"), out, strict=True)):
        if i in masked:
            indent = before[: len(before) - len(before.lstrip())]
            assert after == indent + marker("secret-assignment")
        else:
            assert after == before


def test_a_yaml_binary_value_is_judged_by_its_data() -> None:
    # Given a secret-named YAML key holding base64 data behind the !!binary tag
    data = base64.b64encode(RANDOM.encode() * 2).decode()

    # When it is masked
    out, _ = mask("config/app.yaml", f"signing_secret: !!binary {data}\n")

    # Then the tag stays and the data goes
    assert out[0] == "signing_secret: !!binary " + marker("secret-assignment")


@pytest.mark.parametrize("props", ["&pw ", "&pw !!str ", "!!str &pw ", "!!binary &b "])
def test_a_yaml_anchor_or_tag_before_a_secret_is_kept_and_the_data_masked(props: str) -> None:
    # Given a secret behind an anchor (reused below by an alias) and tags, in either order
    out, _ = mask("config/app.yaml", f"password: {props}{RANDOM}\napi_key: *pw\n")
    # Then the anchor and tags stay, the data goes, and the alias (a reference) stays
    assert out[:2] == [f"password: {props}" + marker("secret-assignment"), "api_key: *pw"]


def test_a_yaml_local_tag_names_or_encrypts_a_value_and_is_left() -> None:
    # `!Ref` and `!secret` name where the value is kept; what follows is not the secret
    text = "Password: !Ref DbPassword\npassword: !secret db_password\n"
    assert mask("template.yaml", text)[0][:2] == text.splitlines()


def test_ordinary_keys_with_block_values_stay() -> None:
    # Given block values under names that hold no secret, and a password policy section
    text = "description: |\n  Rotate the password yearly.\npassword_policy: |\n  min 12\n"

    # When masked, nothing changes
    assert mask("config/app.yaml", text) == (text.split("\n"), {})


def test_values_of_ordinary_names_on_the_next_line_stay() -> None:
    # Given an env list where only non-secret names get literal values
    text = "env:\n  - name: DB_HOST\n    value: db.internal\n  - name: LOG_LEVEL\n    value: info\n"

    # When it is masked
    # Then nothing changes
    assert mask("k8s/deploy.yaml", text) == (text.split("\n"), {})


# --- Kubernetes Secrets ---------------------------------------------------------------------------

ADMIN_B64 = base64.b64encode(b"admin").decode()
PASS_B64 = base64.b64encode(HUMAN.encode()).decode()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  labels:\n    app: api\n"
            "    tier: backend\n  annotations:\n    owner: team-a\ntype: Opaque\n"
            f"data:\n  username: {ADMIN_B64}\n  password: {PASS_B64}\n",
            id="data-far-below-kind",
        ),
        pytest.param(
            f"data:\n  username: {ADMIN_B64}\n  password: '{PASS_B64}'\nkind: Secret\n"
            "apiVersion: v1\n",
            id="data-above-kind",
        ),
        pytest.param(
            f"kind: Secret\napiVersion: v1\nstringData:\n  username: admin\n  password: {HUMAN}\n",
            id="string-data",
        ),
        pytest.param(
            "kind: ConfigMap\ndata:\n  mode: fast\n---\nkind: Secret\nstringData:\n"
            f'  username: "admin"\n  password: "{HUMAN}"\n---\nkind: Service\n',
            id="multi-document",
        ),
        pytest.param(
            "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Secret\n"
            f"    data:\n      username: {ADMIN_B64}\n      password: {PASS_B64}\n",
            id="list-item",
        ),
    ],
)
def test_every_value_of_a_kubernetes_secret_is_masked(text: str) -> None:
    # Given a Secret whose values sit any number of lines away from its kind: line
    # When the file is masked
    out, counts = mask("k8s/secret.yaml", text)

    # Then both values are masked as Kubernetes secret data, and nothing else changed
    secrets = [s for s in (ADMIN_B64, PASS_B64, "admin", HUMAN) if f": {s}" in text or f"'{s}" in text
               or f'"{s}"' in text]  # fmt: skip
    assert_masked(out, text, secrets, "kubernetes-secret")
    assert counts == {"kubernetes-secret": 2}
    assert "kind: Secret" in "\n".join(out)


def test_a_secrets_block_scalar_is_masked_line_by_line() -> None:
    # Given a Secret holding a multi-line value as a YAML block scalar
    text = (
        "kind: Secret\nstringData:\n  config.ini: |\n    [db]\n"
        f"    password = {HUMAN}\n    user = app\n  token: {RANDOM}\nmetadata:\n  name: x\n"
    )

    # When it is masked
    out, _ = mask("k8s/secret.yaml", text)

    # Then every line of the block and the other value are masked; the keys stay
    assert out[2] == "  config.ini: |"
    assert out[3:6] == ["    " + marker("kubernetes-secret")] * 3
    assert out[6] == "  token: " + marker("kubernetes-secret")
    assert out[7:] == ["metadata:", "  name: x", ""]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("kind: ConfigMap\ndata:\n  password_policy: strict\n  mode: fast\n", id="cm"),
        pytest.param(
            "kind: Secret\ndata:\n  password: {{ .Values.db.password | b64enc }}\n"
            "  user: {{ .Values.db.user | b64enc | quote }}\n",
            id="helm-template",
        ),
        pytest.param("kind: Secret\ntype: Opaque\ndata: {}\n", id="empty-data"),
        pytest.param("kind: Secret\nstringData:\n  password: ''\n", id="empty-value"),
        pytest.param("kind: Secret\nstringData:\n  password: null\n", id="null-value"),
    ],
)
def test_config_maps_templates_and_empty_secrets_are_left_alone(text: str) -> None:
    assert mask("k8s/secret.yaml", text) == (text.split("\n"), {})


# bitnami/rabbitmq/templates/config-secret.yaml, as the chart has it
RABBITMQ_CONFIG_SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ printf "%s-config" (include "common.names.fullname" .) }}
  namespace: {{ include "common.names.namespace" . | quote }}
type: Opaque
data:
  {{- if empty .Values.configurationExistingSecret }}
  rabbitmq.conf: |-
    {{- include "common.tplvalues.render" (dict "value" .Values.configuration "context" $) | b64enc | nindent 4 }}
  {{- end }}
  {{- if .Values.advancedConfiguration }}
  advanced.config: |-
    {{- include "common.tplvalues.render" (dict "value" .Values.advancedConfiguration "context" $) | b64enc | nindent 4 }}
  {{- end }}
"""


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            "  password: {{ .Values.auth.password | b64enc | quote }}\n", id="b64enc-quote"
        ),
        pytest.param('  password: "{{ .Values.auth.password }}"\n', id="quoted-action"),
        pytest.param("  password: {{- .Values.auth.password | quote -}}\n", id="trimmed-action"),
        pytest.param(
            '  rabbitmq-password: {{ include "common.secrets.passwords.manage" (dict "secret" '
            '(include "common.names.fullname" .) "key" "rabbitmq-password" "length" 16 '
            '"providedValues" (list "auth.password") "context" $) }}\n',
            id="include-with-literal-arguments",
        ),
        pytest.param("  config.json: {{ tpl .Values.config . | b64enc }}\n", id="tpl"),
        pytest.param(
            "  password: {{ .Values.auth.password\n    | b64enc }}\n", id="action-left-open"
        ),
        pytest.param(
            "  config.ini: |\n    password = {{ .Values.db.password }}\n"
            "    {{- if .Values.tls }}\n    tls = {{ .Values.tls.mode | quote }}\n    {{- end }}\n",
            id="block-of-templated-keys",
        ),
        # bitnami/argo-cd/templates/argocd-secret.yaml: a template's own line among the data
        pytest.param(
            "  clearPassword: {{ $password }}\n"
            '  {{- $password = (trimAll "\\"" $password) | b64dec }}\n'
            '  admin.password: {{ (split ":" (htpasswd "" $password))._1 | b64enc }}\n',
            id="template-variable-lines",
        ),
        # bitnami/postgresql/templates/secrets.yaml: a service binding's constants
        pytest.param(
            '  provider: {{ print "bitnami" | b64enc | quote }}\n'
            '  type: {{ print "postgresql" | b64enc | quote }}\n',
            id="print-of-a-plain-word",
        ),
        # bitnami/influxdb: a shell heredoc writing a Secret from a variable
        pytest.param("  admin-token: $encoded_token\n", id="shell-variable"),
    ],
)
def test_template_expressions_in_a_secrets_data_are_not_secrets(data: str) -> None:
    # Given a Helm template of a Secret whose values the chart computes
    text = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\ntype: Opaque\ndata:\n" + data
    # When it is masked, nothing changes
    assert mask("mychart/templates/secret.yaml", text) == (text.split("\n"), {})


def test_the_rabbitmq_config_secret_template_is_shown_as_written() -> None:
    assert mask("bitnami/rabbitmq/templates/config-secret.yaml", RABBITMQ_CONFIG_SECRET) == (
        RABBITMQ_CONFIG_SECRET.split("\n"),
        {},
    )


@pytest.mark.parametrize(
    ("data", "secret"),
    [
        pytest.param(f'  password: "{HUMAN}"\n', HUMAN, id="quoted-literal"),
        pytest.param(f"  password: {PASS_B64}\n", PASS_B64, id="base64-literal"),
        pytest.param(f'  password: {{{{ "{HUMAN}" | b64enc }}}}\n', HUMAN, id="literal-in-action"),
        pytest.param(
            f'  provider: {{{{ print "{RANDOM}" | b64enc | quote }}}}\n',
            RANDOM,
            id="random-literal-in-action",
        ),
        pytest.param(
            f'  password: "{HUMAN}{{{{ .Values.suffix }}}}"\n', HUMAN, id="literal-beside-action"
        ),
        pytest.param(
            f"  config.ini: |\n    user = {{{{ .Values.user }}}}\n    password = {HUMAN}\n",
            HUMAN,
            id="literal-line-in-a-templated-block",
        ),
        pytest.param("  hash: $2b$12$" + RANDOM + RANDOM + "\n", "$2b$12$" + RANDOM, id="bcrypt"),
    ],
)
def test_literals_in_a_templated_secret_are_still_masked(data: str, secret: str) -> None:
    # Given a Helm template of a Secret, templated lines around a value typed in
    text = (
        "{{- if .Values.auth.enabled }}\napiVersion: v1\nkind: Secret\nmetadata:\n"
        '  name: {{ include "common.names.fullname" . }}\ntype: Opaque\n'
        "stringData:\n  user: {{ .Values.auth.user | quote }}\n" + data + "{{- end }}\n"
    )
    # When it is masked
    out, counts = mask("mychart/templates/secret.yaml", text)
    # Then the literal is gone and the templated lines are as written
    joined = "\n".join(out)
    assert secret not in joined
    assert marker("kubernetes-secret") in joined
    assert "  user: {{ .Values.auth.user | quote }}" in out
    assert counts.get("kubernetes-secret", 0) >= 1


@pytest.mark.parametrize(
    "path", ["mychart/templates/configmap.yaml", "mychart/values.yaml", "conf/app.ini"]
)
@pytest.mark.parametrize(
    ("line", "shown"),
    [
        pytest.param(
            f'password: {{{{ "{HUMAN}" | b64enc }}}}', 'password: {{ "@" | b64enc }}', id="literal"
        ),  # fmt: skip
        pytest.param(
            f'  db_password: {{{{- print "{RANDOM}" | quote -}}}}',
            '  db_password: {{- print "@" | quote -}}',
            id="print-trimmed",
        ),  # fmt: skip
        pytest.param(
            f'password = {{{{ .Values.pw | default "{HUMAN}" }}}}',
            'password = {{ .Values.pw | default "@" }}',
            id="helm-default",
        ),  # fmt: skip
        pytest.param(
            f'password: {{{{ default "{HUMAN}" .Values.pw }}}}',
            'password: {{ default "@" .Values.pw }}',
            id="default-first",
        ),  # fmt: skip
        pytest.param(
            f'password: {{{{ pw | default("{HUMAN}") }}}}',
            'password: {{ pw | default("@") }}',
            id="jinja-default",
        ),  # fmt: skip
        pytest.param(
            f"password: {{{{ pw | default('{HUMAN}') }}}}",
            "password: {{ pw | default('@') }}",
            id="jinja-single-quoted",
        ),  # fmt: skip
        pytest.param(
            f'password: {{{{ printf "%s" "{HUMAN}" | b64enc }}}}',
            'password: {{ printf "%s" "@" | b64enc }}',
            id="printf",
        ),  # fmt: skip
        pytest.param(
            f'password: {{{{ coalesce .Values.pw "{RANDOM}" }}}}',
            'password: {{ coalesce .Values.pw "@" }}',
            id="random-argument",
        ),  # fmt: skip
        pytest.param(
            f'password: {{{{ dig "auth" "password" "{HUMAN}" .Values }}}}',
            'password: {{ dig "auth" "password" "@" .Values }}',
            id="dig-fallback",
        ),  # fmt: skip
        pytest.param(
            f'password: "{{{{ "{HUMAN}" | b64enc }}}}"',
            'password: "{{ "@" | b64enc }}"',
            id="quoted-around-its-own-quotes",
        ),  # fmt: skip
        pytest.param(
            'password: {{ .Values.pw | default "Tr0ub #4dor-x" }}  # the fallback',
            'password: {{ .Values.pw | default "@" }}  # the fallback',
            id="a-hash-inside-the-literal",
        ),  # fmt: skip
    ],
)
def test_a_secret_typed_into_a_template_action_is_masked_outside_a_secret(
    path: str, line: str, shown: str
) -> None:
    # Given a secret-named key whose template renders a literal typed into it (a ConfigMap, a
    # values file, a templated .ini): it leaked, only a Secret's data was read inside its actions
    text = f"{line}\nuser: {{{{ .Values.user }}}}\n"
    # When it is masked
    out, counts = mask(path, text)
    # Then the literal alone is masked, the template around it and the next line as written
    assert out == [shown.replace("@", marker("secret-assignment")), "user: {{ .Values.user }}", ""]
    assert counts == {"secret-assignment": 1}


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("password: {{ .Values.auth.password | b64enc | quote }}", id="values"),
        pytest.param('password: {{ .Values.pw | default "changeme" }}', id="placeholder-default"),
        pytest.param("password: {{ .Values.pw | default (randAlphaNum 10) }}", id="random-default"),
        pytest.param('password: {{ include "x.password" . }}', id="include"),
        pytest.param(
            'password: {{ include "x" (dict "default" "' + RANDOM + '") }}',
            id="a-dict-key-named-default",
        ),  # fmt: skip
        pytest.param('password: {{ index .Values.default "adminPassword2" }}', id="a-map-field"),
        pytest.param(
            'password: {{ include "x" (dict "key" "' + RANDOM + '" "context" $) }}',
            id="arguments-of-an-include",
        ),  # fmt: skip
        pytest.param(
            '{password: {{ .Values.pw }}, image: {{ .Values.img | default "redis:7.2.4-r9" }}}',
            id="the-next-keys-template",
        ),  # fmt: skip
        pytest.param(
            'password: {{ .Values.pw }}{{ if .Values.tls }} mode: {{ default "verify-full2" }}',
            id="a-key-after-the-template",
        ),  # fmt: skip
        pytest.param(f'provider: {{{{ print "{RANDOM}" | b64enc }}}}', id="key-not-secret-named"),
        pytest.param("x: {pw: {a: b}}", id="flow-mapping-braces"),
    ],
)
def test_templates_that_compute_a_secret_are_shown_as_written(line: str) -> None:
    text = line + "\n"
    assert mask("mychart/templates/configmap.yaml", text) == (text.split("\n"), {})


@pytest.mark.parametrize(
    ("path", "line"),
    [
        pytest.param(
            "config.json", f'{{"password": "{{{{ \\"{HUMAN}\\" | b64enc }}}}"}}', id="json-escaped"
        ),  # fmt: skip
        pytest.param(".env", f'DB_PASSWORD={{{{ .Values.pw | default "{HUMAN}" }}}}', id="env"),
        pytest.param(
            "mychart/templates/_helpers.tpl",
            f'password: {{{{ "{RANDOM}" | b64enc }}}}',
            id="helpers-read-as-code",
        ),  # fmt: skip
    ],
)
def test_a_secret_typed_into_a_template_is_masked_in_other_file_kinds(path: str, line: str) -> None:
    # Given a template in a file of no config language (JSON, shell, a Helm helper): judged line
    # by line by the gate, as a tool shows it
    out = shown_by_tools(path, line + "\n")
    secret = HUMAN if HUMAN in line else RANDOM
    assert secret not in out[0] and marker("secret-assignment") in out[0]
    assert out[0].startswith(line[: line.index("{{") + 2])  # the template around it shown


def test_a_secret_before_a_comment_that_holds_a_template_is_masked() -> None:
    out, _ = mask("mychart/values.yaml", f"password: {HUMAN}  # see {{{{ .Values.x }}}}\n")
    assert out[0] == f"password: {marker('secret-assignment')}  # see {{{{ .Values.x }}}}"


def test_a_default_typed_into_a_secrets_template_is_masked() -> None:
    text = (
        "apiVersion: v1\nkind: Secret\ndata:\n"
        f'  password: {{{{ .Values.pw | default "{HUMAN}" | b64enc }}}}\n'
    )
    out, counts = mask("mychart/templates/secret.yaml", text)
    assert HUMAN not in "\n".join(out)
    assert counts == {"kubernetes-secret": 1}


# --- Values continued with a backslash ------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "lines", "kind", "masked"),
    [
        pytest.param(
            "scripts/deploy.sh",
            ["export X_TOKEN=" + RANDOM[:6] + "\\", RANDOM[6:], "echo done"],
            "secret-assignment",
            [0, 1],
            id="shell-token-continued",
        ),
        pytest.param(
            "scripts/aws.sh",
            ["export AWS_ACCESS_KEY_ID=" + AWS_KEY_ID[:8] + "\\", AWS_KEY_ID[8:]],
            "aws-access-key",
            [0, 1],
            id="aws-key-id-split",
        ),
        pytest.param(
            "Dockerfile",
            [
                "ENV LANG=C.UTF-8 \\",
                "    AWS_ACCESS_KEY_ID=" + AWS_KEY_ID[:10] + "\\",
                "    " + AWS_KEY_ID[10:],
            ],  # fmt: skip
            "aws-access-key",
            [1, 2],
            id="dockerfile-indented-continuation",
        ),
        pytest.param(
            "app.properties",
            ["app.token=" + RANDOM[:5] + "\\", "        " + RANDOM[5:], "app.name=demo"],
            "secret-assignment",
            [0, 1],
            id="properties-continued",
        ),
        pytest.param(
            "src/tool.py",
            ["cmd = 'curl -H \"X-Api-Key: " + AWS_KEY_ID[:12] + "\\", AWS_KEY_ID[12:] + "\"'"],
            "aws-access-key",
            [0, 1],
            id="code-continued",
        ),
        pytest.param(
            "scripts/deploy.sh",
            ["export X_TOKEN=" + RANDOM[:7] + "\\\r", RANDOM[7:] + "\r", ""],
            "secret-assignment",
            [0, 1],
            id="crlf",
        ),
    ],
)
def test_a_value_split_by_a_line_continuation_is_masked_on_every_line(
    path: str, lines: list[str], kind: str, masked: list[int]
) -> None:
    # Given a secret split over lines joined by a trailing backslash
    secret = RANDOM if kind == "secret-assignment" else AWS_KEY_ID

    # When the file is masked
    out, counts = mask_file(lines, path)

    # Then each piece is masked where it sits; continuation marks, CRs and line count are kept
    assert len(out) == len(lines)
    assert secret not in "".join(line.rstrip("\\\r").strip() for line in out)
    for i, (before, after) in enumerate(zip(lines, out, strict=True)):
        assert (marker(kind) in after) == (i in masked), (before, after)
        assert after.endswith("\\") == before.endswith("\\")
        assert after.endswith("\r") == before.endswith("\r")
    assert set(counts) == {kind}


def test_an_escaped_backslash_at_the_end_of_a_line_joins_nothing() -> None:
    # Given a line ending in an escaped backslash (a Windows path) above an unrelated line
    lines = ["path=C:\\temp\\\\", "name=" + ALPHA]

    # When it is masked
    # Then neither line is taken for a continued value
    assert mask_file(lines, "scripts/env.sh") == (lines, {})


# --- Keys stored base64-encoded -------------------------------------------------------------------


def test_a_slice_of_a_keys_body_shows_no_key_material() -> None:
    # Given a file with a PEM private key, and a read of body lines only (no BEGIN or END)
    lines = ["KEY = (", *pem(PRIVATE).rstrip("\n").split("\n"), ")", "x = 1"]

    # When the file is masked and the slice passes the gate
    out, counts = mask_file(lines, "src/keys.py")
    shown, _ = scan("\n".join(out[3:6]))

    # Then the key's lines are masked in the file itself, so the slice shows none of them
    assert out[1:-2] == [marker("private-key")] * (len(lines) - 3)
    assert shown == "\n".join([marker("private-key")] * 3)
    assert counts == {"private-key": 1}


def pem(label: str, seed: int = 3) -> str:
    body = base64.b64encode(random.Random(seed).randbytes(600)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return (
        "\n".join(["-----BEGIN " + label + "-----", *lines, "-----END " + label + "-----"]) + "\n"
    )


PRIVATE = "RSA PRIVATE" + " KEY"
KEY_B64 = base64.b64encode(pem(PRIVATE).encode()).decode()
CERT_B64 = base64.b64encode(pem("CERTIFICATE").encode()).decode()


def wrapped(blob: str, width: int = 76) -> list[str]:
    return [blob[i : i + width] for i in range(0, len(blob), width)]


def test_a_base64_encoded_private_key_on_one_line_is_masked() -> None:
    # Given a TLS secret and a kubeconfig holding keys base64-encoded on one line
    text = f"tls:\n  crt: {CERT_B64}\n  key: {KEY_B64}\nusers:\n- user:\n    client-key-data: {KEY_B64}\n"

    # When the file is masked
    out, counts = mask("deploy/tls.yaml", text)

    # Then the keys are masked and the certificate, which is public, is not
    assert out[1] == f"  crt: {CERT_B64}"
    assert out[2] == "  key: " + marker("private-key")
    assert out[5] == "    client-key-data: " + marker("private-key")
    assert counts == {"private-key": 2}


@pytest.mark.parametrize("start", [0, 3, 9], ids=lambda n: f"read-from-line-{n}")
def test_a_wrapped_base64_key_is_masked_whichever_line_a_read_starts_at(start: int) -> None:
    # Given a key base64-encoded and wrapped at 76 columns, as `base64` prints it
    lines = ["# deploy key, base64", *wrapped(KEY_B64), "done = true"]

    # When the file is masked and a slice of it is read
    out, counts = mask_file(lines, "deploy/key.txt")
    shown = out[start:]

    # Then every line of the blob is masked, the lines around it are not
    assert out[0] == lines[0] and out[-1] == lines[-1]
    assert out[1:-1] == [marker("private-key")] * (len(lines) - 2)
    assert not any(piece in "\n".join(shown) for piece in wrapped(KEY_B64))
    assert counts == {"private-key": 1}


@pytest.mark.parametrize("extra", [0, 1, 2], ids=lambda n: f"{n}-bytes-more")
@pytest.mark.parametrize("form", ["yaml-last-line", "json-quoted", "wrapped-last-line"])
def test_a_base64_key_is_masked_to_its_last_character_and_padding(extra: int, form: str) -> None:
    # Given a key base64-encoded with no, one or two `=` of padding, its run ending the text,
    # a quoted JSON value, or the last line of a wrapped blob
    blob = base64.b64encode((pem(PRIVATE) + "#" * extra).encode()).decode()
    if form == "yaml-last-line":
        lines, want = [f"  key: {blob}"], ["  key: " + marker("private-key")]
    elif form == "json-quoted":
        lines = ["{", f'  "key": "{blob}",', '  "id": 1', "}"]
        want = ["{", f'  "key": "{marker("private-key")}",', '  "id": 1', "}"]
    else:
        lines = wrapped(blob)
        want = [marker("private-key")] * len(lines)

    # When the file is masked
    out, counts = mask_file(lines, "deploy/key.txt")

    # Then the whole run is the marker, its last character and padding included
    assert out == want
    assert counts == {"private-key": 1}


def test_a_base64_service_account_json_is_masked() -> None:
    # Given a GCP service-account file (its private_key field a PEM) stored base64-encoded
    account = {"type": "service_account", "private_key": pem("PRIVATE" + " KEY"), "client_id": "1"}
    blob = base64.b64encode(json.dumps(account).encode()).decode()

    # When an env-style file holding it is masked
    out, _ = mask("deploy/app.env.example", f"GOOGLE_CREDENTIALS_B64={blob}\n")

    # Then the blob is gone
    assert blob not in "\n".join(out)
    assert out[0] == "GOOGLE_CREDENTIALS_B64=" + marker("private-key")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"ca.crt: {CERT_B64}\n", id="certificate"),
        pytest.param("\n".join(wrapped(CERT_B64)) + "\n", id="wrapped-certificate"),
        pytest.param(
            '"integrity": "sha512-'
            + base64.b64encode(random.Random(1).randbytes(64)).decode()
            + '",\n',
            id="lockfile-integrity",
        ),
        pytest.param(
            "golang.org/x/text v0.3.7 h1:"
            + base64.b64encode(random.Random(2).randbytes(32)).decode()
            + "\n",
            id="go-sum",
        ),
        pytest.param("LS0tLS0gbm90IGEga2V5IC0tLS0t\n", id="dashes-but-no-key"),
    ],
)
def test_other_base64_is_left_alone(text: str) -> None:
    assert mask("deploy/files.yaml", text) == (text.split("\n"), {})


# --- Properties of the whole pass -----------------------------------------------------------------

FRAGMENTS_SECRET = [
    f"password: {HUMAN}",
    f"DB_PASSWORD={HUMAN}",
    f"export X_TOKEN={RANDOM}",
    f'api_key = "{RANDOM}"',
    f"aws_access_key_id = {AWS_KEY_ID}",
    f"url: postgres://app:{HUMAN}@db:5432/app",
]
FRAGMENTS_PLAIN = [
    "host: db",
    "password: ${DB_PASSWORD}",
    "name = demo",
    "# set the password: later",
    "commit: 3f786850e387550fdab836ed7e6dc881de23001b",
    "id: 550e8400-e29b-41d4-a716-446655440000",
    "",
    "    indented: true",
]


@pytest.mark.parametrize("seed", range(16))
def test_masking_keeps_every_line_and_with_the_gate_shows_no_secret(seed: int) -> None:
    # Given a file of secret and ordinary lines in random order, endings and indentation
    rng = random.Random(seed)
    path = rng.choice(["a.yaml", "a.ini", "a.sh", "Dockerfile", "a.py", "a.md"])
    lines = [
        rng.choice(["", "  "]) + rng.choice(FRAGMENTS_SECRET + FRAGMENTS_PLAIN)
        + rng.choice(["", "\r"])
        for _ in range(rng.randint(0, 40))
    ]  # fmt: skip

    # When it is masked, and what a tool shows of it passes the gate
    out, _ = mask_file(lines, path)
    shown, _ = scan("\n".join(out))

    # Then no line was added or removed, no secret is left, ordinary lines are as they were,
    # and masking the masked file again changes nothing
    assert len(out) == len(lines)
    assert shown.count("\n") == max(0, len(lines) - 1)
    for secret in (HUMAN, RANDOM, AWS_KEY_ID):
        assert secret not in shown
    for before, after in zip(lines, out, strict=True):
        if before.strip() in FRAGMENTS_PLAIN:
            assert after == before
    assert mask_file(out, path) == (out, {})


def test_a_failing_pass_withholds_the_whole_file(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a whole-file pass that breaks on this file
    import codeask.redact.files as files

    def broken(text: str, syntax: str | None = None) -> list[tuple[int, int, str]]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(files, "find_spans", broken)
    lines = ["db:", f"  password: {HUMAN}", "  host: db"]

    # When it is masked
    out, counts = mask_file(lines, "config/app.yaml")

    # Then every line is withheld (fail closed), and the line count still holds
    assert out == [marker("unscanned")] * 3
    assert counts == {"unscanned": 1}


def test_a_yaml_explicit_keys_secret_value_is_masked() -> None:
    # Given YAML's explicit keys (`? key` then `: value`), which YAML reads as `key: value`
    text = (
        f'config:\n  ? password\n  : {HUMAN}\n  ? db_password  # the db\n  : "{RANDOM}"  # x\n'
        f"  ? name\n  : {RANDOM}\n  ? token\n  : changeme\n"
    )
    # When masked
    out, counts = mask("chart/values.yaml", text)
    # Then the secret-named keys' values are masked, comments and the others as written
    assert out[2] == "  : " + marker("secret-assignment")
    assert out[4] == f'  : "{marker("secret-assignment")}"  # x'
    assert out[6:9] == [f"  : {RANDOM}", "  ? token", "  : changeme"]
    assert counts == {"secret-assignment": 2}
    # ... and a long run of blanks after a key or a value is read once (no lazy match)
    long = ["? password" + " " * 200_000, ": " + HUMAN + " " * 200_000 + "#"]
    assert HUMAN not in "\n".join(mask("v.yaml", "\n".join(long))[0])


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(f'{{{{ .Values.pw | default "{HUMAN}" | quote }}}}', id="default"),
        pytest.param(f'"{{{{ .Values.pw | default "{HUMAN}" }}}}"', id="quoted-around-quotes"),
        pytest.param(f'{{{{ "{HUMAN}" | quote }}}}', id="literal"),
    ],
)
def test_a_secret_typed_into_the_template_of_a_named_env_value_is_masked(value: str) -> None:
    # Given a container's env entry whose name says password and whose value is a template
    text = f"env:\n  - name: DB_PASSWORD\n    value: {value}\n  - name: MODE\n    value: {value}\n"
    # When masked
    out, _ = mask("mychart/templates/deployment.yaml", text)
    # Then the literal under the password's name is masked, the template shown; MODE's is not
    assert HUMAN not in out[2] and out[2].startswith("    value: ")
    assert marker("secret-assignment") in out[2] and "{{" in out[2]
    assert out[4] == f"    value: {value}"
