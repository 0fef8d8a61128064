"""One real-looking credential per provider shape, as it shows up in an agent's session
(a config file read, an env dump, a curl command, a traceback), and the key-value forms a
secret takes whatever its provider.

Every secret is fake and assembled at run time from its provider's fixed prefix and
seeded random characters: no secret sits in the repository, so nothing here is a leak for
a scanner to flag. `needle` is the random part: it must survive in no stored byte.
"""

from __future__ import annotations

import random
import string

import msgspec

ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


class Sample(msgspec.Struct, frozen=True):
    provider: str
    kind: str  # the marker that must replace it: [REDACTED:<kind>]
    text: str
    needle: str


class _Parts:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def __call__(self, n: int, alphabet: str = ALNUM) -> str:
        return "".join(self._rng.choice(alphabet) for _ in range(n))


def corpus(seed: int = 19) -> list[Sample]:
    r = _Parts(seed)
    out: list[Sample] = []

    def add(provider: str, kind: str, template: str, needle: str) -> None:
        out.append(Sample(provider, kind, template.format(s=needle), needle))

    add(
        "Stripe",
        "stripe-access-token",
        "charge failed for key {s} (HTTP 401)",
        "sk_" + "live_" + r(24),
    )
    add("Stripe", "stripe-access-token", "STRIPE_RESTRICTED={s}", "rk_" + "test_" + r(24))
    add(
        "AWS",
        "aws_access_key",
        "aws_access_key_id = {s}",
        "AKIA" + r(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
    )
    add("AWS", "generic-api-key", "aws_secret: aws_secret_access_key = {s}", r(40, B64))
    add("GCP", "google_api_key", "maps?key={s}&q=x", "AIza" + r(35, URLSAFE))
    add(  # the PEM block goes first, then the JSON string holding what is left of it
        "GCP",
        "secret_assignment",
        '{{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n{s}\\n'
        '-----END PRIVATE KEY-----\\n"}}',
        r(64, B64),
    )
    add("GCP", "gcp-oauth-client-secret", "client_secret: {s}", "GOCSPX-" + r(28, URLSAFE))
    add(
        "Azure",
        "azure-ad-client-secret",
        "AZURE_CLIENT_SECRET={s}",
        r(3) + "8Q~" + r(34, ALNUM + "_~."),
    )
    add(
        "Azure",
        "azure-storage-account-key",
        "DefaultEndpointsProtocol=https;AccountName=store1;AccountKey={s};EndpointSuffix=core.windows.net",
        r(86, B64) + "==",
    )
    add("GitHub", "github_token", "remote: Invalid token {s}", "ghp_" + r(36))
    add("GitHub", "github_token", "GH_TOKEN={s}", "github_pat_" + r(22) + "_" + r(59, ALNUM + "_"))
    add(
        "GitLab",
        "gitlab_token",
        "git push https://oauth2@gitlab.com (token {s})",
        "glpat-" + r(20, URLSAFE),
    )
    add("GitLab", "gitlab-rrt", "--registration-token {s}", "GR1348941" + r(20, URLSAFE))
    add(
        "Slack",
        "slack_token",
        "SLACK_BOT_TOKEN={s}",
        "xoxb-" + r(12, "0123456789") + "-" + r(12, "0123456789") + "-" + r(24),
    )
    add(
        "Slack",
        "slack-webhook-url",
        "curl -X POST {s} -d '{{}}'",
        "https://hooks.slack.com/services/T" + r(8, UPPER) + "/B" + r(10, UPPER) + "/" + r(24),
    )
    add("Twilio", "twilio-api-key", "twilio api key {s}", "SK" + r(32, HEX))
    add(
        "SendGrid",
        "sendgrid-api-token",
        "sg.send() with {s}",
        "SG." + r(22, URLSAFE) + "." + r(43, URLSAFE),
    )
    add("Mailgun", "mailgun-private-api-token", "MAILGUN_API_KEY=key-{s}", r(32, HEX))
    add("Mailchimp", "mailchimp-api-key", "mailchimp_key: {s}", r(32, HEX) + "-us21")
    add("npm", "npm_token", "//registry.npmjs.org/:_authToken={s}", "npm_" + r(36))
    add("PyPI", "pypi-upload-token", "password = {s}", "pypi-AgEIcHlwaS5vcmc" + r(70, URLSAFE))
    add(
        "Docker Hub",
        "dockerhub-access-token",
        "echo {s} | docker login -u me --password-stdin",
        "dckr_pat_" + r(27, URLSAFE),
    )
    add("Heroku", "heroku-api-key-v2", "heroku auth:token -> {s}", "HRKU-AA" + r(58, URLSAFE))
    add(
        "Heroku",
        "heroku-api-key",
        "HEROKU_API_KEY={s}",
        "-".join(r(n, HEX) for n in (8, 4, 4, 4, 12)),
    )
    add("DigitalOcean", "digitalocean-pat", "doctl auth init -t {s}", "dop_v1_" + r(64, HEX))
    add("Shopify", "shopify-access-token", "X-Shopify-Access-Token: {s}", "shpat_" + r(32, HEX))
    add("Square", "square-access-token", "square token {s}", "sq0atp-" + r(22, URLSAFE))
    add("Square", "square-oauth-secret", "application secret {s}", "sq0csp-" + r(43, URLSAFE))
    add(
        "Discord",
        "discord-bot-token",
        "import discord\nclient.run('{s}')",
        "M" + r(25, URLSAFE) + "." + r(6, URLSAFE) + "." + r(38, URLSAFE),
    )
    add(
        "Telegram",
        "telegram-bot-api-token",
        "TELEGRAM_BOT_TOKEN={s}",
        r(9, "0123456789") + ":AA" + r(33, URLSAFE),
    )
    add(
        "Telegram",
        "telegram-bot-token",
        "bot = Bot('{s}')",
        r(10, "0123456789") + ":AA" + r(33, URLSAFE),
    )
    add("Datadog", "datadog-access-token", "DATADOG_APP_KEY={s}", r(40, LOWER))
    add("New Relic", "new-relic-user-api-key", "NEW_RELIC_API_KEY=NRAK-{s}", r(27, UPPER))
    add("Sentry", "sentry-user-token", "sentry-cli --auth-token {s}", "sntryu_" + r(64, HEX))
    add("HashiCorp Vault", "vault-service-token", "VAULT_TOKEN={s}", "hvs." + r(95, URLSAFE))
    add(
        "HashiCorp Terraform",
        "hashicorp-tf-api-token",
        'token = "{s}"',
        r(14, LOWER) + ".atlasv1." + r(67, LOWER),
    )
    add(
        "Databricks",
        "databricks-api-token",
        "databricks configure --token {s}",
        "dapi" + r(32, HEX),
    )
    add(
        "Atlassian",
        "atlassian-api-token",
        "curl -u me@x.io:{s} https://x.atlassian.net",
        "ATATT3" + r(186, URLSAFE),
    )
    add("Linear", "linear-api-key", "Authorization: {s}", "lin_api_" + r(40))
    add(
        "Notion",
        "notion-api-token",
        "notion = Client(auth='{s}')",
        "ntn_" + r(11, "0123456789") + r(35),
    )
    add("Notion", "notion-legacy-token", "NOTION_KEY {s}", "secret_" + r(43))
    add(
        "OpenAI",
        "openai_key",
        "openai.api_key = '{s}'",
        "sk-proj-" + r(74, URLSAFE) + "T3BlbkFJ" + r(74, URLSAFE),
    )
    add("Anthropic", "anthropic_key", "x-api-key: {s}", "sk-ant-api03-" + r(93, URLSAFE) + "AA")
    add(
        "Hugging Face",
        "huggingface-access-token",
        "huggingface-cli login --token {s}",
        "hf_" + r(34, string.ascii_letters),
    )
    add("Doppler", "doppler-api-token", "DOPPLER_TOKEN={s}", "dp.pt." + r(43))
    add(
        "Postman",
        "postman-api-token",
        "postman login --with-api-key {s}",
        "PMAK-" + r(24, HEX) + "-" + r(34, HEX),
    )
    add(
        "Grafana",
        "grafana-service-account-token",
        "grafana sa token {s}",
        "glsa_" + r(32) + "_" + r(8, HEX),
    )
    add("Cloudflare", "cloudflare-api-key", "CLOUDFLARE_API_TOKEN={s}", r(40, LOWER + "_-"))
    add("Fly.io", "flyio-access-token", "FLY_API_TOKEN {s}", "fo1_" + r(43, URLSAFE))
    add("PlanetScale", "planetscale-api-token", "pscale token {s}", "pscale_tkn_" + r(43, URLSAFE))
    add("Pulumi", "pulumi-api-token", "PULUMI_ACCESS_TOKEN {s}", "pul-" + r(40, HEX))
    add("RubyGems", "rubygems-api-token", ":rubygems_api_key: {s}", "rubygems_" + r(48, HEX))
    add(
        "1Password",
        "1password-service-account-token",
        "OP_SERVICE_ACCOUNT_TOKEN {s}",
        "ops_eyJ" + r(260, B64),
    )
    add(
        "age",
        "age-secret-key",
        "# created: 2026\n{s}",
        "AGE-SECRET-KEY-1" + r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    )
    add("Alibaba Cloud", "alibaba-access-key-id", "access key {s}", "LTAI" + r(20))
    add(
        "Dynatrace",
        "dynatrace-api-token",
        "Api-Token {s}",
        "dt0c01." + r(24, UPPER) + "." + r(64, UPPER),
    )
    add("Brevo", "sendinblue-api-token", "api-key: {s}", "xkeysib-" + r(64, HEX) + "-" + r(16))
    add("Perplexity", "perplexity-api-key", "PPLX {s}", "pplx-" + r(48))
    add("Okta", "okta-access-token", "OKTA_API_TOKEN={s}", "00" + r(40, URLSAFE))
    add("Algolia", "algolia-api-key", "algolia admin key = {s}", r(32, LOWER))
    add("Twitch", "twitch-api-token", "twitch_client_secret: {s}", r(30, LOWER))
    add(
        "JWT",
        "jwt",
        "Cookie: session=eyJhbGciOiJIUzI1NiJ9.eyJ{s}",
        r(30, URLSAFE) + "." + r(43, URLSAFE),
    )
    add(
        "SSH",
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----",
        r(70, B64),
    )
    add("PostgreSQL", "url_credentials", "DATABASE_URL=postgres://app:{s}@db:5432/app", r(20))
    add(
        "Kubernetes",
        "kubernetes-secret-yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: {s}\n",
        r(32, B64) + "=",
    )
    # key-value assignments, whatever the provider, however the names chain
    add("assignment", "secret_assignment", 'export API_TOKEN="{s} and more"', "Pl4nted " + r(12))
    add("assignment", "generic-api-key", '{{"password": "{s}"}}', "Pl4nted-" + r(10))
    add("assignment", "generic-api-key", "db:\n  password: {s}\n  user: app", "Pl4nted" + r(10))
    add("assignment", "generic-api-key", "mysql --password={s} -h db", "Pl4nted" + r(10))
    add("assignment", "secret_flag", "vault login --token {s}", "Pl4nted" + r(12))
    add("assignment", "secret_assignment", "token = secret = {s}", "Pl4nted" + r(10))
    add("assignment", "secret_assignment", '{{\\"client_secret\\": \\"{s}\\"}}', "Pl4nted" + r(10))
    add("assignment", "generic-api-key", "SECRET_KEY={s}\nDEBUG=1", "Pl4nted" + r(10))
    return out


SAMPLES = corpus()
PROVIDERS = sorted({s.provider for s in SAMPLES} - {"assignment"})
