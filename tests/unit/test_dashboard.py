"""The dashboard and the alarms of template.yaml, read as data and held to the metric catalogue.

Every Codeask metric that a widget or an alarm names must be one the code emits (ops.CATALOGUE),
with the dimension set it is emitted with; the metrics that matter must be on the dashboard. A
metric renamed on either side breaks this test; tests/integration/test_metrics.py holds the
catalogue to what the handlers really print.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from codeask.ops import CATALOGUE, NAMESPACE, ErrorKind
from fakes.cfn import CfnLoader

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
FUNCTIONS = ("SlackEventsFunction", "AnswerWorkerFunction", "MirrorWarmerFunction")
LATENCIES = ("AckLatency", "EndToEndLatency", "SyncLatency")
PERCENTILES = ("p50", "p95", "p99")

# The figures the issue asks ops to see at a glance.
MATTER = {
    "QuestionsReceived", "AnswersPosted", "EndToEndLatency", "AckLatency", "SyncLatency",
    "Refusals", "Errors", "EstimatedCostUSD", "InputTokens", "OutputTokens", "CacheReadTokens",
    "UnverifiedPaths", "MirrorAge", "ModelFallbacks", "AckErrors",
}  # fmt: skip
# Catalogue entries deliberately kept off the dashboard (none today): a new metric must either get
# a widget or be named here.
NOT_ON_DASHBOARD: set[str] = set()

SUB_REF = re.compile(r"\$\{(?!!)([^}]+)\}")
SEARCH = re.compile(
    r"SEARCH\('\{(?P<schema>[^}]*)\}(?P<terms>[^']*)',\s*'(?P<stat>[^']+)',\s*(?P<period>\d+)\)"
)
TERM = re.compile(r'(\w+)="([^"]*)"')
INSIGHTS = re.compile(
    r"SELECT\s+(?P<fn>\w+)\((?P<name>\w+)\)\s+FROM\s+SCHEMA\((?P<schema>[^)]*)\)"
    r"(?:\s+WHERE\s+(?P<where>.*))?$"
)
PSEUDO = {"AWS::Region": "us-east-1", "AWS::StackName": "codeask", "AWS::AccountId": "123456789012"}


@dataclass(frozen=True)
class MetricRef:
    """One metric a widget or alarm reads. dims maps each dimension to its value; None: any."""

    namespace: str
    name: str
    dims: dict[str, Any]
    stat: str | None
    where: str
    period: int | None = None


# ------------------------------------------------------------------ loading


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded = yaml.load(TEMPLATE.read_text(), Loader=CfnLoader)
    assert isinstance(loaded, dict)
    return loaded


def raw_body(template: dict[str, Any]) -> str:
    dash = template["Resources"]["CodeaskDashboard"]
    assert dash["Type"] == "AWS::CloudWatch::Dashboard"
    body = dash["Properties"]["DashboardBody"]
    assert set(body) == {"Fn::Sub"} and isinstance(body["Fn::Sub"], str), (
        "DashboardBody is one !Sub of a JSON string, so it can be read here"
    )
    return str(body["Fn::Sub"])


def substitute(template: dict[str, Any], text: str) -> str:
    """What CloudFormation would make of the !Sub: parameters take their defaults, resources a
    recognisable placeholder, ${!x} becomes a literal ${x}. An unknown reference fails."""
    params, resources = template["Parameters"], template["Resources"]

    def value(match: re.Match[str]) -> str:
        ref = match.group(1)
        if ref in PSEUDO:
            return PSEUDO[ref]
        if ref in params:
            return str(params[ref]["Default"])
        logical = ref.split(".", 1)[0]
        assert logical in resources, f"${{{ref}}} names nothing in the template"
        return f"<{ref}>"

    return SUB_REF.sub(value, text).replace("${!", "${")


@pytest.fixture(scope="module")
def body(template: dict[str, Any]) -> dict[str, Any]:
    loaded = json.loads(substitute(template, raw_body(template)))
    assert isinstance(loaded, dict)
    return loaded


def metric_widgets(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for w in body["widgets"] if w["type"] == "metric"]


def search_refs(expression: str, where: str) -> list[MetricRef]:
    refs = []
    for m in SEARCH.finditer(expression):
        namespace, *dims = [p.strip() for p in m.group("schema").split(",")]
        terms = dict(TERM.findall(m.group("terms")))
        name = terms.pop("MetricName")
        assert set(terms) <= set(dims), f"{where}: SEARCH filters a dimension not in its schema"
        refs.append(
            MetricRef(namespace, name, {d: terms.get(d) for d in dims}, m.group("stat"), where,
                      int(m.group("period")))
        )  # fmt: skip
    return refs


def widget_refs(widget: dict[str, Any]) -> list[MetricRef]:
    props = widget["properties"]
    where = props["title"]
    refs = []
    for entry in props["metrics"]:
        if isinstance(entry[0], dict):
            refs += search_refs(entry[0]["expression"], where)
            continue
        options = entry[-1] if isinstance(entry[-1], dict) else {}
        plain = entry[:-1] if options else entry
        assert "." not in plain and "..." not in plain, f"{where}: write metrics out in full"
        namespace, name, *pairs = plain
        assert len(pairs) % 2 == 0, f"{where}: {entry}"
        dims = dict(zip(pairs[::2], pairs[1::2], strict=True))
        stat = options.get("stat", props.get("stat"))
        period = options.get("period", props.get("period"))
        refs.append(MetricRef(namespace, name, dims, stat, where, period))
    return refs


def dashboard_refs(body: dict[str, Any]) -> list[MetricRef]:
    return [r for w in metric_widgets(body) for r in widget_refs(w)]


def alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: r["Properties"]
        for name, r in template["Resources"].items()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    }


def dims_of(dimensions: list[dict[str, Any]]) -> dict[str, Any]:
    return {d["Name"]: d["Value"] for d in dimensions}


def alarm_refs(name: str, alarm: dict[str, Any]) -> list[MetricRef]:
    if "MetricName" in alarm:
        stat = alarm.get("Statistic") or alarm.get("ExtendedStatistic")
        return [MetricRef(alarm["Namespace"], alarm["MetricName"],
                          dims_of(alarm.get("Dimensions", [])), stat, name, alarm["Period"])]  # fmt: skip
    refs = []
    for query in alarm["Metrics"]:
        if "MetricStat" in query:
            stat = query["MetricStat"]
            metric = stat["Metric"]
            refs.append(MetricRef(metric["Namespace"], metric["MetricName"],
                                  dims_of(metric.get("Dimensions", [])), stat["Stat"], name,
                                  stat["Period"]))  # fmt: skip
            continue
        expression = query["Expression"]
        assert "SEARCH" not in expression.upper(), f"{name}: alarms cannot use SEARCH"
        insights = INSIGHTS.match(expression.strip())
        if insights:
            namespace, *dims = [p.strip().strip('"') for p in insights.group("schema").split(",")]
            fixed = dict(re.findall(r"(\w+)\s*=\s*'([^']*)'", insights.group("where") or ""))
            refs.append(MetricRef(namespace, insights.group("name"),
                                  {d: fixed.get(d) for d in dims}, insights.group("fn"), name,
                                  query.get("Period")))  # fmt: skip
    return refs


def all_alarm_refs(template: dict[str, Any]) -> list[MetricRef]:
    return [r for name, alarm in alarms(template).items() for r in alarm_refs(name, alarm)]


# ------------------------------------------------------------------ the body


def test_the_body_is_json_and_every_reference_in_it_resolves(
    template: dict[str, Any], body: dict[str, Any]
) -> None:
    refs = set(SUB_REF.findall(raw_body(template)))
    assert {"AWS::Region", "JobsDLQ.QueueName", "SlackHttpApi", *FUNCTIONS} <= refs
    assert body["widgets"]
    for widget in metric_widgets(body):
        assert widget["properties"]["region"] == PSEUDO["AWS::Region"], widget["properties"]
        assert widget["properties"]["title"]


def test_widgets_sit_on_the_24_column_grid_without_overlapping(body: dict[str, Any]) -> None:
    taken: dict[tuple[int, int], str] = {}
    for widget in body["widgets"]:
        x, y, w, h = (widget[k] for k in ("x", "y", "width", "height"))
        assert x >= 0 and y >= 0 and w >= 1 and h >= 1 and x + w <= 24, widget
        title = widget["properties"].get("title", "")
        for cell in ((cx, cy) for cx in range(x, x + w) for cy in range(y, y + h)):
            assert cell not in taken, f"{title!r} overlaps {taken[cell]!r}"
            taken[cell] = title


def test_math_expressions_only_use_ids_of_their_own_widget(body: dict[str, Any]) -> None:
    for widget in metric_widgets(body):
        entries = widget["properties"]["metrics"]
        ids = {
            (e[0] if isinstance(e[0], dict) else e[-1]).get("id")
            for e in entries
            if isinstance(e[0], dict) or isinstance(e[-1], dict)
        } - {None}
        for entry in entries:
            if isinstance(entry[0], dict) and "SEARCH" not in entry[0]["expression"]:
                used = set(re.findall(r"\b[a-z]\w*\b", entry[0]["expression"]))
                assert used and used <= ids, (widget["properties"]["title"], used - ids)


# ------------------------------------------------------------------ dashboard and alarms vs code


def test_every_codeask_metric_the_dashboard_and_alarms_read_is_catalogued(
    template: dict[str, Any], body: dict[str, Any]
) -> None:
    refs = [r for r in dashboard_refs(body) + all_alarm_refs(template) if r.namespace == NAMESPACE]
    assert refs
    for ref in refs:
        assert ref.name in CATALOGUE, f"{ref.where}: {ref.name} is not emitted by the code"
        _, split = CATALOGUE[ref.name]
        assert set(ref.dims) == {"service"} | ({split} if split else set()), ref
        assert ref.dims["service"] == "codeask", ref


def test_the_metrics_that_matter_are_on_the_dashboard(body: dict[str, Any]) -> None:
    shown = {r.name for r in dashboard_refs(body) if r.namespace == NAMESPACE}
    assert sorted(MATTER - shown) == []
    assert MATTER <= set(CATALOGUE)


def test_every_catalogued_metric_has_a_place_on_the_dashboard(body: dict[str, Any]) -> None:
    shown = {r.name for r in dashboard_refs(body) if r.namespace == NAMESPACE}
    assert sorted(set(CATALOGUE) - shown - NOT_ON_DASHBOARD) == []
    assert NOT_ON_DASHBOARD <= set(CATALOGUE)


def test_split_metrics_are_searched_across_every_value_of_their_dimension(
    body: dict[str, Any],
) -> None:
    for ref in dashboard_refs(body):
        if ref.namespace == NAMESPACE and CATALOGUE[ref.name][1]:
            split = CATALOGUE[ref.name][1]
            assert split is not None
            assert ref.dims[split] is None, f"{ref.where}: {ref.name} pinned to one {split}"
    searched = {(r.name, d) for r in dashboard_refs(body) for d, v in r.dims.items() if v is None}
    assert {("Refusals", "Reason"), ("Errors", "Kind"), ("Redactions", "Kind"),
            ("MirrorAge", "Repo")} <= searched  # fmt: skip


def test_latencies_show_p50_p95_p99_and_have_time_units(body: dict[str, Any]) -> None:
    for name in LATENCIES:
        stats = {r.stat for r in dashboard_refs(body) if r.name == name}
        assert set(PERCENTILES) <= stats, name
        assert CATALOGUE[name][0].value in ("Seconds", "Milliseconds"), name


def test_tokens_and_cost_are_summed_per_day(body: dict[str, Any]) -> None:
    for name in ("InputTokens", "OutputTokens", "CacheReadTokens", "CacheWriteTokens",
                 "EstimatedCostUSD"):  # fmt: skip
        refs = [r for r in dashboard_refs(body) if r.name == name]
        assert refs and all((r.stat, r.period) == ("Sum", 86400) for r in refs), name


def test_aws_side_widgets_point_at_this_stacks_resources(body: dict[str, Any]) -> None:
    aws = {(r.namespace, r.name, json.dumps(r.dims, sort_keys=True), r.stat)
           for r in dashboard_refs(body) if r.namespace.startswith("AWS/")}  # fmt: skip
    for fn in FUNCTIONS:
        dims = json.dumps({"FunctionName": f"<{fn}>"})
        for metric, stat in (("Errors", "Sum"), ("Throttles", "Sum"), ("Duration", "p95")):
            assert ("AWS/Lambda", metric, dims, stat) in aws, (fn, metric)
    dlq = json.dumps({"QueueName": "<JobsDLQ.QueueName>"})
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible", dlq, "Maximum") in aws
    assert ("AWS/ApiGateway", "5xx", json.dumps({"ApiId": "<SlackHttpApi>"}), "Sum") in aws


def test_threshold_lines_follow_the_alarm_parameters(
    template: dict[str, Any], body: dict[str, Any]
) -> None:
    params = template["Parameters"]
    lines = {
        r.name: w["properties"]["annotations"]["horizontal"][0]["value"]
        for w in metric_widgets(body)
        if "annotations" in w["properties"]
        for r in widget_refs(w)
    }
    assert lines["EndToEndLatency"] == params["EndToEndP95AlarmSeconds"]["Default"]
    assert lines["MirrorAge"] == params["MirrorStaleAlarmSeconds"]["Default"]
    raw = raw_body(template)
    assert '"value": ${EndToEndP95AlarmSeconds}' in raw
    assert '"value": ${MirrorStaleAlarmSeconds}' in raw


def test_the_alarm_widget_lists_every_alarm(template: dict[str, Any], body: dict[str, Any]) -> None:
    listed = [a for w in body["widgets"] if w["type"] == "alarm" for a in w["properties"]["alarms"]]
    assert sorted(listed) == sorted(f"<{name}.Arn>" for name in alarms(template))


# ------------------------------------------------------------------ alarms


def the_alarm(template: dict[str, Any], **needle: str) -> tuple[str, dict[str, Any]]:
    """The one alarm that reads a metric matching `needle` (namespace, name)."""
    found = [
        (name, alarm)
        for name, alarm in alarms(template).items()
        if any(
            (ref.namespace, ref.name) == (needle["namespace"], needle["name"])
            for ref in alarm_refs(name, alarm)
        )
    ]
    assert len(found) == 1, (needle, [n for n, _ in found])
    return found[0]


def test_five_alarms_one_per_condition(template: dict[str, Any]) -> None:
    assert len(alarms(template)) == 5
    params = template["Parameters"]

    _, dlq = the_alarm(template, namespace="AWS/SQS", name="ApproximateNumberOfMessagesVisible")
    assert dims_of(dlq["Dimensions"]) == {"QueueName": {"Fn::GetAtt": ["JobsDLQ", "QueueName"]}}
    assert (dlq["Statistic"], dlq["Threshold"], dlq["ComparisonOperator"]) == (
        "Maximum", 0, "GreaterThanThreshold")  # fmt: skip

    name, worker = the_alarm(template, namespace="AWS/Lambda", name="Invocations")
    refs = alarm_refs(name, worker)
    assert {(r.namespace, r.name) for r in refs} == {
        ("Codeask", "Errors"), ("AWS/Lambda", "Errors"), ("AWS/Lambda", "Invocations")}  # fmt: skip
    assert all(r.dims.get("FunctionName") == {"Ref": "AnswerWorkerFunction"}
               for r in refs if r.namespace == "AWS/Lambda")  # fmt: skip
    assert worker["Threshold"] == {"Ref": "WorkerErrorRateAlarmPercent"}

    name, ack = the_alarm(template, namespace="AWS/ApiGateway", name="5xx")
    refs = alarm_refs(name, ack)
    assert {(r.namespace, r.name) for r in refs} == {("Codeask", "AckErrors"),
                                                    ("AWS/ApiGateway", "5xx")}  # fmt: skip
    assert [r.dims for r in refs if r.name == "5xx"] == [{"ApiId": {"Ref": "SlackHttpApi"}}]
    assert (ack["Threshold"], ack["ComparisonOperator"]) == (0, "GreaterThanThreshold")

    name, mirror = the_alarm(template, namespace="Codeask", name="MirrorAge")
    (ref,) = alarm_refs(name, mirror)
    assert ref.stat == "MAX" and ref.dims == {"Repo": None, "service": "codeask"}
    assert mirror["Threshold"] == {"Ref": "MirrorStaleAlarmSeconds"}
    assert params["MirrorStaleAlarmSeconds"]["Default"] == 3600
    assert mirror["TreatMissingData"] == "breaching"  # no MirrorAge at all: the warmer is down

    _, latency = the_alarm(template, namespace="Codeask", name="EndToEndLatency")
    assert latency["ExtendedStatistic"] == "p95"
    assert latency["Threshold"] == {"Ref": "EndToEndP95AlarmSeconds"}
    assert params["EndToEndP95AlarmSeconds"]["Default"] == 60


def test_alarm_expressions_return_one_series_and_no_search(template: dict[str, Any]) -> None:
    for name, alarm in alarms(template).items():
        if "Metrics" not in alarm:
            continue
        returned = [q for q in alarm["Metrics"] if q.get("ReturnData", True)]
        assert len(returned) == 1 and "Expression" in returned[0], name
        ids = {q["Id"] for q in alarm["Metrics"]}
        expression = returned[0]["Expression"]
        if not expression.lstrip().upper().startswith("SELECT"):
            used = set(re.findall(r"\b[a-z]\w*\b", expression))
            assert used and used <= ids, (name, used - ids)
        periods = {q["MetricStat"]["Period"] for q in alarm["Metrics"] if "MetricStat" in q}
        assert len(periods) <= 1, f"{name}: metric math needs one period"


def test_alarms_notify_the_topic_only_when_one_is_given(template: dict[str, Any]) -> None:
    assert template["Parameters"]["AlarmTopicArn"]["Default"] == ""
    assert template["Conditions"]["HasAlarmTopic"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]}]
    }
    guarded = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    for name, alarm in alarms(template).items():
        assert alarm["AlarmActions"] == guarded, name
        assert alarm["OKActions"] == guarded, name
        assert "InsufficientDataActions" not in alarm, name
        assert alarm.get("AlarmDescription"), f"{name}: say what to do"
        assert "Condition" not in template["Resources"][name], f"{name}: always created"


def test_the_error_kind_the_worker_alarm_watches_is_one_the_code_emits(
    template: dict[str, Any],
) -> None:
    name, worker = the_alarm(template, namespace="AWS/Lambda", name="Invocations")
    (errors,) = [r for r in alarm_refs(name, worker) if r.namespace == NAMESPACE]
    kind = ErrorKind(errors.dims["Kind"])  # a ValueError names a kind the code does not have
    source = (ROOT / "layers/codeask/codeask/lambdas.py").read_text()
    assert re.search(rf'emit\("Errors",\s*[^,]+,\s*ErrorKind\.{kind.name}\)', source), kind


# ------------------------------------------------------------------ the local picture


def test_bench_dashboard_draws_each_widget_from_emf_lines(
    tmp_path: Path, body: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("bench_dashboard", ROOT / "bench/dashboard.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)  # its dataclasses look themselves up there
    spec.loader.exec_module(bench)

    def doc(ts: int, dims: dict[str, str], **values: tuple[str, list[float]]) -> str:
        metrics = [{"Name": n, "Unit": unit} for n, (unit, _) in values.items()]
        directive = {"Namespace": "Codeask", "Dimensions": [list(dims)], "Metrics": metrics}
        return json.dumps({"_aws": {"Timestamp": ts, "CloudWatchMetrics": [directive]}, **dims,
                           **{n: v for n, (_, v) in values.items()}})  # fmt: skip

    service = {"service": "codeask"}
    emf = tmp_path / "emf.jsonl"
    emf.write_text(
        "not json: a log line\n"
        + doc(1_000_000, service, AckLatency=("Milliseconds", [10.0]), QuestionsReceived=("Count", [1.0]))
        + "\n"
        + doc(1_030_000, service, AckLatency=("Milliseconds", [20.0, 30.0, 40.0]))
        + "\n"
        + doc(1_031_000, {**service, "Reason": "dm"}, Refusals=("Count", [1.0]))
        + "\n"
        + doc(1_040_000, service, AnswersPosted=("Count", [1.0]), AnswersWithUnverifiedPaths=(
              "Count", [1.0]), UnverifiedPaths=("Count", [2.0]), EstimatedCostUSD=("None", [0.5]))
        + "\n"
    )  # fmt: skip
    out = tmp_path / "dashboard.png"
    summary = dict(bench.render(emf, TEMPLATE, out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(summary) == [w["properties"]["title"] for w in body["widgets"]]
    assert summary["Ack latency p50 / p95 / p99 (ms)"] == ["p50: 25", "p95: 38.5", "p99: 39.7"]
    assert summary["Refusals by reason (per hour)"] == ["dm: 1"]
    assert "questions queued: 1" in summary["Questions and answers (per hour)"]
    rate = summary["Unverified-path rate"]
    assert rate[:2] == [
        "% of answers citing an unverified path: 100",
        "unverified paths per answer: 2",
    ]
    assert "USD per day: 0.5" in summary["Estimated cost per day (USD)"]
    lambda_panel = summary["Lambda AnswerWorkerFunction: errors, throttles, duration"]
    assert lambda_panel and all(f.startswith("no local data") for f in lambda_panel)
