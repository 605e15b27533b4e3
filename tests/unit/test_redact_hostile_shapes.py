"""Secret shapes a hostile review found leaking: multi-line strings, netrc entries, XML elements, UUID keys."""

from __future__ import annotations

import pytest

from codeask.redact import REDACTED, scan
from conftest import shown_by_tools as masked

# Fake secrets are assembled at runtime so this file holds no secret-shaped literal.
HUMAN = "Hd7Fj2" + "Kl5Zx9Cv"
RANDOM = "Bn4Vc7" + "Xz2Lk9Jh"
LETTERS = "sunshine" + "lollipop"  # a typed password of letters only
UUID = "a1b2c3d4-e5f6-7890-" + "abcd-ef1234567890"
MARK = REDACTED.format(kind="secret-assignment")


def assert_only_secret_lines_changed(text: str, out: list[str], secrets: tuple[str, ...]) -> None:
    assert not any(s in line for line in out for s in secrets), out
    for before, after in zip(text.split("\n"), out, strict=True):
        if any(s in before for s in secrets):
            assert MARK in after, (before, after)
        else:
            assert after == before


MULTILINE = [
    ("conf/app.toml", f"[db]\npassword = '''{HUMAN}'''\nport = 5432"),
    ("conf/app.toml", f'[db]\ntoken = """\n{RANDOM}"""\nport = 5432'),
    ("conf/app.toml", f'[db]\napi_key = """{RANDOM}\n{HUMAN}\n"""\nport = 5432'),
    ("conf/app.toml", f"[db]\r\nsecret = '''\r\n{RANDOM}\r\n'''\r\nport = 5432"),
    ("main.tf", f'resource "x" "y" {{\n  master_password = <<EOT\n{HUMAN}\nEOT\n}}'),
    ("main.tf", f'resource "x" "y" {{\n  password = <<-EOT\n    {HUMAN}\n    {RANDOM}\n  EOT\n}}'),
    ("vars.hcl", f'client_secret = <<"END"\n{RANDOM}\nEND\nregion = "eu"'),
    ("vars.hcl", f"api_token = <<END\nWeekEND-{RANDOM}\nEND"),  # only a line of its own ends it
]


@pytest.mark.parametrize(("path", "text"), MULTILINE)
def test_a_multi_line_string_under_a_secret_name_is_masked_on_every_line(
    path: str, text: str
) -> None:
    # Given a secret-named key whose value is a TOML multi-line string or an HCL heredoc
    # When the file is masked
    out = masked(path, text)

    # Then no line of the value shows, the delimiters and other lines stay, line count kept
    assert_only_secret_lines_changed(text, out, (HUMAN, RANDOM))


MULTILINE_KEPT = [
    ("conf/app.toml", f'[x]\ndescription = """\n{RANDOM} is a sample\n"""'),
    ("main.tf", f'resource "x" "y" {{\n  policy = <<EOT\n{RANDOM}\nEOT\n}}'),
    ("main.tf", 'resource "x" "y" {\n  password = <<EOT\n${var.db_password}\nEOT\n}'),
    ("conf/app.toml", '[x]\ntoken = """\n{{ .Values.token }}\n"""'),
]


@pytest.mark.parametrize(("path", "text"), MULTILINE_KEPT)
def test_multi_line_strings_of_ordinary_names_and_templates_stay(path: str, text: str) -> None:
    assert masked(path, text) == text.split("\n")


NETRC = [
    ("conf/netrc", f"machine api.example.com login bob password {HUMAN}"),
    ("conf/netrc", f"machine b.example.com\n  login alice\n  password {HUMAN}\nmachine c"),
    ("_netrc", f"default login anonymous password {RANDOM}"),
    ("ci/setup.sh", f'echo "machine git.example.com login ci password {RANDOM}" > ~/.netrc'),
    ("Dockerfile", f"RUN printf 'machine h account a login u password {HUMAN}\\n' > /root/.netrc"),
    ("docs/netrc.txt", f"machine h\r\n\tlogin u\r\n\tpassword {HUMAN}\r\n"),
]


@pytest.mark.parametrize(("path", "text"), NETRC)
def test_a_netrc_password_is_masked_in_any_file(path: str, text: str) -> None:
    # Given a .netrc entry, on one line or several, in a netrc copy, a script or a Dockerfile
    out = masked(path, text)

    # Then its password is masked where it stands, also when the line is scanned alone
    assert_only_secret_lines_changed(text, out, (HUMAN, RANDOM))
    for line in text.split("\n"):
        if "machine" in line and "password" in line:
            assert not any(s in scan(line)[0] for s in (HUMAN, RANDOM)), line


@pytest.mark.parametrize(
    "text",
    [
        "machine h login u password $NETRC_PASSWORD",
        "machine h login u password changeme",
        "Reset the password in the login form.",
        "the login password is asked for by the machine",
    ],
)
def test_netrc_like_text_without_a_password_stays(text: str) -> None:
    assert masked("notes/setup.md", text) == [text]


XML = [
    ("conf/web.xml", f"<config>\n  <password>{HUMAN}</password>\n</config>"),
    ("settings.xml", f"<server>\n  <id>x</id>\n  <passphrase>{HUMAN}</passphrase>\n</server>"),
    ("pom.xml", f"<properties>\r\n  <db.password>{HUMAN}</db.password>\r\n</properties>"),
    ("app.config", f"<settings><keyPassword>{HUMAN}</keyPassword></settings>"),
    ("beans.xml", f"<bean><clientSecret>{RANDOM}</clientSecret></bean>"),
]


@pytest.mark.parametrize(("path", "text"), XML)
def test_an_xml_element_named_for_a_secret_has_its_text_masked(path: str, text: str) -> None:
    # An element's text is data, however much it looks like an identifier
    out = masked(path, text)
    assert_only_secret_lines_changed(text, out, (HUMAN, RANDOM))


@pytest.mark.parametrize(
    "text",
    [
        "<password>${env.DB_PASSWORD}</password>",
        "<password>changeme</password>",
        "<token>{{ .Values.token }}</token>",
        "<passwordPolicy>Strict3Policy</passwordPolicy>",
    ],
)
def test_xml_references_placeholders_and_non_secret_elements_stay(text: str) -> None:
    assert masked("conf/web.xml", text) == [text]


UUID_KEYS = [
    ("conf/npmrc.txt", f"//registry.npmjs.org/:_authToken={UUID}"),
    ("ci/publish.sh", f"set -e\nNPM_AUTH_TOKEN={UUID}"),
    ("conf/settings.json", f'{{"auth_token": "{UUID}"}}'),
    ("src/client.py", f'API_KEY = "{UUID}"'),
    ("config/app.yaml", f"service:\n  api-key: {UUID}"),
]


@pytest.mark.parametrize(("path", "text"), UUID_KEYS)
def test_a_uuid_under_an_auth_token_or_api_key_name_is_masked(path: str, text: str) -> None:
    out = masked(path, text)
    assert_only_secret_lines_changed(text, out, (UUID,))


@pytest.mark.parametrize(
    "text",
    [
        f'request_id = "{UUID}"',
        f'idempotency_token = "{UUID}"',
        f'key_id = "{UUID}"',
    ],
)
def test_uuids_under_other_names_stay(text: str) -> None:
    assert masked("src/client.py", text) == [text]


COMMAND_LINES = [
    ("deploy/run.sh", f"mysql -h db -uroot -p{HUMAN} app"),
    ("README.md", f"    mysqldump -P 3306 -uroot -p{RANDOM} -e 'select 1'"),
    ("deploy/run.sh", f"sshpass -p '{HUMAN}' ssh deploy@host"),
    ("deploy/run.sh", f'sshpass -p "$OLD" true || sshpass -p {HUMAN} ssh deploy@host'),
    ("ci.yml", f"      - run: docker login -u ci -p {RANDOM} registry.example.com"),
    ("deploy/run.sh", f"helm registry login r.example.com --username ci --password {RANDOM}"),
    ("deploy/run.sh", f"psql --username app --password {HUMAN}[0] --dbname app"),
    ("docs/ops.md", f"vault login --token {RANDOM}"),
    ("deploy/run.sh", f"PGPASSWORD={HUMAN} psql -h db -U app"),
    ("deploy/app.service", f'[Service]\nEnvironment="DB_PASSWORD={HUMAN}"'),
    ("deploy/app.service", f"[Service]\nEnvironment=API_TOKEN={RANDOM}"),
    ("Jenkinsfile", f"sh 'env DEPLOY_TOKEN={RANDOM} ./deploy.sh'"),
]


@pytest.mark.parametrize(("path", "text"), COMMAND_LINES)
def test_secrets_on_command_lines_and_in_environment_words_are_masked(path: str, text: str) -> None:
    # Given a password passed as a command's option or set as an environment word
    out = masked(path, text)

    # Then it is masked where it stands and the command around it stays readable
    assert_only_secret_lines_changed(text, out, (HUMAN, RANDOM))


@pytest.mark.parametrize(
    "text",
    [
        "ssh -p 2222 deploy@host",
        "mysql -p app",
        "ansible-vault edit --ask-vault-pass encrypted.yml",
        "ansible-playbook -vvvvv --ask-vault-password test_vault.yml",
        "docker login --password-stdin registry.example.com",
        "vault login --token $VAULT_TOKEN",
        'parser.add_argument("--password", help="the password")',
        "connect(API_KEY=api_key)",
        "export DB_PASSWORD=$(cat /run/secrets/db)",
    ],
)
def test_flags_without_a_secret_and_code_stay(text: str) -> None:
    assert masked("deploy/run.sh", text) == [text]


LOOK_ALIKES = [
    ("conf/app.yaml", "p\u0430ssword: " + HUMAN),  # Cyrillic а
    ("conf/app.yaml", "db_p\u0430\u0455\u0455word: " + HUMAN),  # Cyrillic а and ѕ
    ("conf/app.yaml", "\uff50\uff41\uff53\uff53\uff57\uff4f\uff52\uff44: " + HUMAN),  # fullwidth
    ("src/app.py", 'API_T\u041eKEN = "' + RANDOM + '"'),  # Cyrillic capital О
    ("conf/app.ini", "[db]\nse\u0441ret = " + RANDOM),  # Cyrillic с
    ("conf/app.json", '{"\u03b1pi_key": "' + RANDOM + '"}'),  # Greek alpha
]


@pytest.mark.parametrize(("path", "text"), LOOK_ALIKES)
def test_names_spelled_with_look_alike_letters_are_read_as_what_they_imitate(
    path: str, text: str
) -> None:
    out = masked(path, text)
    assert_only_secret_lines_changed(text, out, (HUMAN, RANDOM))


def test_look_alike_text_elsewhere_is_shown_as_written() -> None:
    text = "описание: пароль не хранится здесь\nname: \uff41\uff50\uff50"
    assert masked("conf/app.yaml", text) == text.split("\n")


DIRECTIVES = [
    ("redis.conf", f"bind 127.0.0.1\nrequirepass {HUMAN}\nport 6379"),
    ("redis.conf", f"masterauth {RANDOM}   # the primary's\nreplica-read-only yes"),
    ("conf/app.conf", f"[db]\n  password {HUMAN}\n  user app"),
    ("my.cnf", f"[client]\r\npassword {RANDOM}\r\nhost db"),
    ("conf/app.cfg.example", f"auth_token {RANDOM}\ntimeout 30"),
]


@pytest.mark.parametrize(("path", "text"), DIRECTIVES)
def test_a_config_directive_without_an_equals_sign_is_masked(path: str, text: str) -> None:
    # Given a .conf-style `name value` line whose name says secret (redis's requirepass)
    # When the file is masked
    out = masked(path, text)

    # Then its value is masked where it stood and every other line is shown as written
    assert_only_secret_lines_changed(text, out, (HUMAN, RANDOM))


DIRECTIVES_KEPT = [
    ("nginx.conf", "ssl_password_file /etc/nginx/pw.txt;\nlisten 443 ssl;"),
    ("redis.conf", "requirepass\nport 6379"),  # no value
    ("app.conf", f"password {HUMAN} {RANDOM}\nuser app"),  # several words: prose, not a value
    ("app.conf", "password_hash_algorithm sha256\nauth_method md5"),
    ("notes.py", f"password {HUMAN}\n"),  # code is judged by the assignment rules, not this one
]


@pytest.mark.parametrize(("path", "text"), DIRECTIVES_KEPT)
def test_lines_that_only_look_like_directives_are_kept(path: str, text: str) -> None:
    assert masked(path, text) == text.split("\n")


SETTINGS = [
    ("ci/publish.sh", f"npm config set //registry.npmjs.org/:_authToken {RANDOM}"),
    ("ci/publish.sh", f"npm config set -g _authToken={RANDOM}"),
    ("README.md", f"```sh\nnpm config set //npm.pkg.github.com/:_authToken={RANDOM}\n```"),
    ("Dockerfile", f"RUN yarn config set npmAuthToken {RANDOM} && yarn install"),
    ("Dockerfile", f"RUN pnpm config set --location=project _password '{HUMAN}'"),
    (".github/workflows/ci.yml", f"    steps:\n      - run: npm config set _authToken {RANDOM}"),
    ("ci/setup.sh", f'git config --global http.extraheader "AUTHORIZATION: bearer {RANDOM}"'),
    (
        "docs/ci.md",
        f"    git config --file .git/config http.extraheader 'Authorization: token {RANDOM}'",
    ),
    ("ci/setup.sh", f"aws configure set --profile prod aws_secret_access_key {RANDOM}"),
    ("ci/setup.sh", f"poetry config pypi-token.private {RANDOM}"),
    ("ci/setup.sh", f"composer config --global github-oauth.github.com {RANDOM}"),
    ("docs/dev.md", f'dotnet user-secrets set "Db:Password" "{HUMAN}"'),
    ("docs/dev.md", f'dotnet user-secrets set "Smtp:Password" "{LETTERS}"'),
    # `npm set` is `npm config set`: the word "config" need be nowhere in the text
    ("ci/publish.sh", f"npm set //registry.npmjs.org/:_authToken {RANDOM}"),
    ("Dockerfile", f"RUN npm set _auth {RANDOM}"),
]


@pytest.mark.parametrize(("path", "text"), SETTINGS)
def test_a_config_setting_command_for_a_secret_name_has_its_value_masked(
    path: str, text: str
) -> None:
    # Given a command that sets a secret-named key (or an auth header) to a literal value
    out = masked(path, text)

    # Then the value is masked where it stands, also when the line is scanned alone, and the
    # command and its key stay readable
    assert_only_secret_lines_changed(text, out, (HUMAN, RANDOM, LETTERS))
    for line in text.split("\n"):
        assert not any(s in scan(line)[0] for s in (HUMAN, RANDOM, LETTERS)), line
    assert any(w in line for line in out for w in ("config", "user-secrets", "npm set"))


@pytest.mark.parametrize(
    "text",
    [
        "npm config set registry https://registry.npmjs.org/",
        "npm config set //registry.npmjs.org/:_authToken ${NPM_TOKEN}",
        "npm config set //registry.npmjs.org/:_authToken $NPM_TOKEN",
        "npm config get _authToken",
        "npm config delete //registry.npmjs.org/:_authToken",
        "yarn config set npmAlwaysAuth true",
        'git config --global user.name "Jane Doe"',
        "git config --global credential.helper store",
        "git config --global credential.helper 'cache --timeout=3600'",
        'git config --global http.extraheader "X-Request-Source: ci-pipeline-42"',
        "git config --unset http.extraheader",
        "aws configure set region eu-west-1",
        "poetry config virtualenvs.in-project true",
    ],
)
def test_config_commands_setting_ordinary_keys_stay(text: str) -> None:
    assert masked("ci/setup.sh", text) == [text]
    assert masked("docs/ci.md", text) == [text]


PGPASS = [
    (".pgpass", f"db.example.com:5432:app:appuser:{HUMAN}"),
    (".pgpass", f"db:5432:app:app:{HUMAN}XX  \nlocalhost:5432:*:app:{RANDOM}"),  # blanks after
    ("deploy/pgpass", f"# prod\n*:*:*:postgres:{RANDOM}\nlocalhost:5432:*:app:{HUMAN}"),
    ("conf/prod.pgpass", f"db\\:primary:5432:app:app:{HUMAN}\r\n"),  # an escaped colon
    ("conf/prod.pgpass", f"db:5432:app:app:{HUMAN}:{RANDOM}"),  # a colon in the password
    ("conf/.pgpass.example", "db:5432:app:app:!Qaz2wsx-" + HUMAN),
    ("ci/setup.sh", f'echo "db:5432:app:ci:{RANDOM}" > ~/.pgpass && chmod 600 ~/.pgpass'),
    ("Dockerfile", f"RUN printf '*:*:*:postgres:{HUMAN}\\n' >> /root/.pgpass"),
]


@pytest.mark.parametrize(("path", "text"), PGPASS)
def test_a_pgpass_entrys_password_is_masked(path: str, text: str) -> None:
    # Given `host:port:database:user:password` lines in a pgpass file, or written to one
    out = masked(path, text)

    # Then the password (all after the fourth unescaped colon) is masked; the rest stays readable
    assert_only_secret_lines_changed(text, out, (HUMAN, RANDOM))
    for before, after in zip(text.split("\n"), out, strict=True):
        if HUMAN in before or RANDOM in before:
            fields = before.replace("\\:", "").split(":")
            assert after.replace("\\:", "").split(":")[:4] == fields[:4]
            if path.endswith("pgpass") and not before.endswith("\r"):
                assert after.rstrip(" ").endswith(MARK), after  # the password's last character too


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (".pgpass", "# hostname:port:database:username:password"),
        (".pgpass", "db:5432:app:app:"),
        (".pgpass", "db:5432:app:app:changeme"),
        ("ci/setup.sh", 'echo "db:5432:app:ci:$PGPASSWORD" > ~/.pgpass'),
        ("ci/setup.sh", "chmod 600 ~/.pgpass  # then: psql -h db -U app"),
        ("conf/hosts.txt", "a:b:c:d:e5f6g7h8i9"),  # five fields, but not a pgpass file
        ("ci/setup.sh", f'echo "db:5432:app:ci:$PW" > ~/.pgpass\nRATIO=1:2:3:4:{HUMAN}'),
        ("src/time.py", "TIMES = ['10:20:30:40:50']"),
    ],
)
def test_pgpass_look_alikes_stay(path: str, text: str) -> None:
    assert masked(path, text) == text.split("\n")
