"""`diagnostics.otel` resolved with the `OTEL_*` environment fallbacks (`resolve`), and
the config file accepting OpenClaw's keys."""

from __future__ import annotations

import pytest

from runtime.model import ConfigError, parse_config
from runtime.telemetry import DiagnosticsConfig, OtelConfig, resolve


def _on(**keys: object) -> DiagnosticsConfig:
    return DiagnosticsConfig(otel=OtelConfig(enabled=True, **keys))  # type: ignore[arg-type]


def test_off_by_default_even_with_the_environment_set() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert resolve(DiagnosticsConfig(), env) is None
    assert resolve(parse_config({}).diagnostics, env) is None


def test_enabled_exports_traces_and_metrics_to_the_default_endpoint_logs_off() -> None:
    s = resolve(_on(), {})
    assert s is not None
    assert s.traces_url == "http://localhost:4318/v1/traces"
    assert s.metrics_url == "http://localhost:4318/v1/metrics"
    assert s.logs_url is None
    assert s.service_name == "openclaw" and s.metric_prefix == "openclaw."
    assert s.capture_content is False and s.flush_interval_ms == 60_000


def test_config_keys_win_over_the_environment_and_signal_endpoints_are_exact() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://env-metrics/custom",
        "OTEL_SERVICE_NAME": "from-env",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-a=1,x-b=two%20words",
    }
    s = resolve(
        _on(endpoint="http://cfg:4318/", logs=True, headers={"x-a": "cfg"}, serviceName="gw"),
        env,
    )
    assert s is not None
    assert s.traces_url == "http://cfg:4318/v1/traces"
    assert s.metrics_url == "http://env-metrics/custom"  # the signal's own env beats shared
    assert s.logs_url == "http://cfg:4318/v1/logs"
    assert s.service_name == "gw"
    assert s.headers == {"x-a": "cfg", "x-b": "two words"}
    s = resolve(_on(tracesEndpoint="http://t/exact"), env)
    assert s is not None and s.traces_url == "http://t/exact"
    assert s.service_name == "from-env" and s.metrics_url == "http://env-metrics/custom"


def test_a_shared_endpoint_ending_in_a_signal_path_keeps_it_for_that_signal() -> None:
    s = resolve(_on(endpoint="https://otlp.example/api/v1/traces", logs=True), {})
    assert s is not None
    assert s.traces_url == "https://otlp.example/api/v1/traces"
    assert s.metrics_url == "https://otlp.example/api/v1/metrics"
    assert s.logs_url == "https://otlp.example/api/v1/logs"


def test_what_turns_signals_or_everything_off() -> None:
    assert resolve(_on(), {"OTEL_SDK_DISABLED": "TRUE"}) is None
    assert resolve(DiagnosticsConfig(enabled=False, otel=OtelConfig(enabled=True)), {}) is None
    s = resolve(_on(), {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"})
    assert s is not None and s.traces_url is None and s.metrics_url is not None
    assert resolve(_on(traces=False, metrics=False), {}) is None
    s = resolve(_on(logs=True, logsExporter="stdout", metrics=False), {})
    assert s is not None and s.logs_url is None


def test_flush_interval_is_clamped_and_read_from_the_environment() -> None:
    s = resolve(_on(flushIntervalMs=10), {})
    assert s is not None and s.flush_interval_ms == 1000
    s = resolve(_on(), {"OTEL_METRIC_EXPORT_INTERVAL": "5000"})
    assert s is not None and s.flush_interval_ms == 5000


def test_the_config_file_takes_openclaws_keys_and_names_a_bad_one() -> None:
    config = parse_config(
        {
            "diagnostics": {
                "enabled": True,
                "flags": ["x"],
                "otel": {
                    "enabled": True,
                    "protocol": "http/protobuf",
                    "sampleRate": 0.5,
                    "metricNamePrefix": "acme.",
                    "captureContent": True,
                },
            }
        }
    )
    s = resolve(config.diagnostics, {})
    assert s is not None and s.sample_rate == 0.5 and s.metric_prefix == "acme."
    assert s.capture_content is True
    with pytest.raises(ConfigError, match=r"diagnostics\.otel\.sampleRate"):
        parse_config({"diagnostics": {"otel": {"sampleRate": 2}}})
    with pytest.raises(ConfigError, match=r"diagnostics\.otel"):
        parse_config({"diagnostics": {"otel": {"protocol": "grpc"}}})
    with pytest.raises(ConfigError, match=r"diagnostics\.otel"):
        parse_config({"diagnostics": {"otel": {"metricNamePrefix": "9bad"}}})


def test_sampler_and_queue_size_from_the_environment() -> None:
    env = {
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.25",
        "OTEL_BSP_MAX_QUEUE_SIZE": "100",
    }
    s = resolve(_on(), env)
    assert s is not None and s.sample_rate == 0.25 and s.max_queue_items == 100
    s = resolve(_on(sampleRate=0.5), env)
    assert s is not None and s.sample_rate == 0.5  # the config key wins
    s = resolve(_on(), {"OTEL_TRACES_SAMPLER": "always_off", "OTEL_BSP_MAX_QUEUE_SIZE": "x"})
    assert s is not None and s.sample_rate == 0.0 and s.max_queue_items == 2048
    s = resolve(_on(), {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "7"})
    assert s is not None and s.sample_rate is None
