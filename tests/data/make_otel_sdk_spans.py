"""Write ``otel_sdk_spans.json``: spans exported by the OpenTelemetry Python SDK with OpenInference attributes.

Run by hand (needs ``opentelemetry-sdk`` and ``openinference-semantic-conventions``, which agentstats does not
depend on): ``python tests/data/make_otel_sdk_spans.py tests/data/otel_sdk_spans.json``. The SDK's console
exporter writes each span's ``to_json()`` (children before their parent); three traces of a small agent: an
AGENT root with RETRIEVER, LLM (token counts, one requested tool call) and TOOL spans, one root ending in an error.
"""
import json
import sys

from openinference.semconv.trace import MessageAttributes, ToolCallAttributes
from openinference.semconv.trace import OpenInferenceSpanKindValues as K
from openinference.semconv.trace import SpanAttributes as SA
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

out = open(sys.argv[1], "w")
provider = TracerProvider(resource=Resource.create({"service.name": "sdk-bot"}))
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
tracer = provider.get_tracer("gen")

def run(task, trial, success, city, fail=False):
    with tracer.start_as_current_span("agent") as root:
        root.set_attribute(SA.OPENINFERENCE_SPAN_KIND, K.AGENT.value)
        root.set_attribute(SA.INPUT_VALUE, f"Weather in {city}?")
        root.set_attribute(SA.METADATA, json.dumps({"task_id": task, "trial": trial, "success": success}))
        with tracer.start_as_current_span("retrieve") as s:
            s.set_attribute(SA.OPENINFERENCE_SPAN_KIND, K.RETRIEVER.value)
        with tracer.start_as_current_span("llm") as s:
            s.set_attribute(SA.OPENINFERENCE_SPAN_KIND, K.LLM.value)
            s.set_attribute(SA.LLM_MODEL_NAME, "gpt-4o-mini")
            s.set_attribute(SA.LLM_TOKEN_COUNT_PROMPT, 100)
            s.set_attribute(SA.LLM_TOKEN_COUNT_COMPLETION, 9)
            pre = f"{SA.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_TOOL_CALLS}.0."
            s.set_attribute(pre + ToolCallAttributes.TOOL_CALL_ID, f"c-{task}-{trial}")
            s.set_attribute(pre + ToolCallAttributes.TOOL_CALL_FUNCTION_NAME, "get_weather")
            s.set_attribute(pre + ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON, json.dumps({"city": city}))
        with tracer.start_as_current_span("get_weather") as s:
            s.set_attribute(SA.OPENINFERENCE_SPAN_KIND, K.TOOL.value)
            s.set_attribute(SA.TOOL_NAME, "get_weather")
            s.set_attribute(SA.INPUT_VALUE, json.dumps({"city": city}))
            s.set_attribute(SA.OUTPUT_VALUE, "sunny")
        if fail:
            try:
                raise TimeoutError("slow tool")
            except TimeoutError as exc:
                root.record_exception(exc)
                root.set_status(Status(StatusCode.ERROR, "slow tool"))
        root.set_attribute(SA.OUTPUT_VALUE, "Sunny.")

run("paris", 0, True, "Paris")
run("paris", 1, False, "Pari")
run("rome", 0, False, "Rome", fail=True)
provider.shutdown()
out.close()
print(SA.LLM_TOKEN_COUNT_PROMPT, ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON, SA.METADATA)
