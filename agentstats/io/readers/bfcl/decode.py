"""Decoding a BFCL model's raw output into tool calls, in the style of the model's BFCL handler (2024-08)."""

from __future__ import annotations

import ast
import json
import operator
import re
from typing import Any

from agentstats.records.trial import ToolCall

__all__ = ["BfclDecodeError", "decode_bfcl_output", "output_style"]


class BfclDecodeError(ValueError):
    """A model's raw output holds no decodable function call (BFCL: ``ast_decoder:*`` failures)."""


def output_style(model: str) -> str:
    r"""How a model's raw output is decoded.

    ``fc``: list of ``{name: json-args}``; ``hermes``: ``<tool_call>`` JSON lines; ``granite``:
    ``<function_call>`` JSON; ``xlam``: ``{"tool_calls": [...]}``; ``glm``: name line + JSON line; ``raven``:
    ``f(...); g(...);``; Python call lists: ``python`` (newlines removed, brackets added when missing),
    ``python_mistral`` (also un-escapes Markdown ``\\_``), ``python_extract`` (the first ``[...]`` span),
    ``python_fenced`` (inside a Markdown code fence), ``python_strip`` (outer ``[]'`` stripped, a bare call
    allowed).

    The style per model was chosen to follow BFCL's model handlers of 2024-08 (gorilla
    ``model_handler/*``) and checked against BFCL's decoder verdicts on this data (see
    ``docs/scoring.md``, "BFCL agreement").
    """
    if model.startswith("NousResearch_"):
        return "hermes"
    if model.startswith("ibm-granite_"):
        return "granite"
    if model.startswith("Salesforce_xLAM"):
        return "xlam"
    if model.startswith("THUDM_glm"):
        return "glm"
    if model.startswith("Nexusflow-Raven"):
        return "raven"
    if "-FC" in model or model.endswith("-fc") or model.startswith("gemini-"):
        return "fc"
    if model.startswith(("mistral-", "open-mistral", "open-mixtral")):
        return "python_mistral"
    if model.startswith("google_gemma"):
        return "python_extract"
    if model.startswith("deepseek-ai_"):
        return "python_fenced"
    if model.startswith(("databricks-dbrx", "snowflake_arctic", "nvidia_nemotron")):
        return "python_strip"
    return "python"


def _wrap_list(text: str) -> str:
    text = text.replace("\n", "")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    return text


# ----------------------------------------------------------------------------------------------------
# decoding raw model output
# ----------------------------------------------------------------------------------------------------
_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv,
}


def _value(node: ast.AST) -> Any:
    """Python value of an argument expression, as BFCL's ``resolve_ast_by_type`` gives it."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _value(node.operand)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
        return ast.unparse(node)
    if isinstance(node, ast.List):
        return [_value(x) for x in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(x) for x in node.elts)
    if isinstance(node, ast.Dict):
        return {
            _value(k) if k is not None else None: _value(v)
            for k, v in zip(node.keys, node.values, strict=True)
        }
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _value(node.left), _value(node.right)
        if all(isinstance(x, int | float) and not isinstance(x, bool) for x in (left, right)):
            try:
                return _BINOPS[type(node.op)](left, right)
            except (ArithmeticError, ValueError):
                pass
        return ast.unparse(node)
    if isinstance(node, ast.Name):
        return node.id
    return ast.unparse(node)


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_call_name(node.value)}.{node.attr}"
    raise BfclDecodeError(f"not a function name: {ast.unparse(node)}")


def _call(node: ast.AST) -> ToolCall:
    if not isinstance(node, ast.Call):
        raise BfclDecodeError(f"not a function call: {ast.unparse(node)[:80]}")
    if node.args:
        raise BfclDecodeError("positional arguments (BFCL: decoder_wrong_output_format)")
    args = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise BfclDecodeError("**kwargs in call")
        args[kw.arg] = _value(kw.value)
    return ToolCall(name=_call_name(node.func), arguments=args)


def _parse_python_list(text: str, *, allow_bare: bool) -> list[ToolCall]:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise BfclDecodeError(f"invalid syntax: {exc.msg}") from None
    body = tree.body
    if isinstance(body, ast.List | ast.Tuple):
        return [_call(e) for e in body.elts]
    if allow_bare and isinstance(body, ast.Call):
        return [_call(body)]
    raise BfclDecodeError("output is not a list of calls")


def _json_call(obj: Any, name_key: str = "name", args_key: str = "arguments") -> ToolCall:
    if not isinstance(obj, dict) or name_key not in obj:
        raise BfclDecodeError(f"not a call object: {str(obj)[:80]}")
    args = obj.get(args_key, {})
    if not isinstance(args, dict):
        raise BfclDecodeError("arguments are not an object")
    return ToolCall(name=str(obj[name_key]), arguments=args)


def _loads(s: str) -> Any:
    try:
        return json.loads(s)
    except json.JSONDecodeError as exc:
        raise BfclDecodeError(f"invalid JSON: {exc}") from None


def decode_bfcl_output(result: Any, model: str) -> list[ToolCall]:
    """Decode one raw BFCL model output into calls, in the style of the model's BFCL handler.

    Parameters
    ----------
    result : str or list
        The ``result`` field of a BFCL result line.
    model : str
        Model folder name (decides the output style, :func:`output_style`).

    Returns
    -------
    list of ToolCall

    Raises
    ------
    BfclDecodeError
        When the output holds no decodable call list (BFCL then fails the entry).
    """
    style = output_style(model)
    if style == "fc":
        if not isinstance(result, list):
            raise BfclDecodeError("no function call (text answer)")
        calls = []
        for item in result:
            if not isinstance(item, dict) or len(item) != 1:
                raise BfclDecodeError(f"not a {{name: arguments}} item: {str(item)[:80]}")
            ((name, args),) = item.items()
            if isinstance(args, str):
                args = _loads(args)
            if not isinstance(args, dict):
                raise BfclDecodeError("arguments are not an object")
            calls.append(ToolCall(name=name, arguments=args))
        return calls
    if not isinstance(result, str):
        raise BfclDecodeError(f"expected text output, got {type(result).__name__}")
    if style == "hermes":
        calls, inside = [], False
        for line in result.split("\n"):
            if line == "<tool_call>":
                inside = True
            elif line == "</tool_call>":
                inside = False
            elif inside:
                calls.append(_json_call(_loads(line.replace("'", '"'))))
        return calls
    if style == "granite":
        calls = []
        for chunk in result.split("<function_call>"):
            chunk = chunk.strip()
            if chunk:
                calls.append(_json_call(_loads(chunk)))
        return calls
    if style == "xlam":
        obj = _loads(result.strip())
        if not isinstance(obj, dict) or not isinstance(obj.get("tool_calls"), list):
            raise BfclDecodeError("no tool_calls list")
        return [_json_call(c) for c in obj["tool_calls"]]
    if style == "glm":
        lines = result.split("\n")
        if len(lines) < 2:
            raise BfclDecodeError("no arguments line")
        args = _loads(lines[1])
        if not isinstance(args, dict):
            raise BfclDecodeError("arguments are not an object")
        return [ToolCall(name=lines[0].strip(), arguments=args)]
    if style == "raven":
        try:
            tree = ast.parse(result.strip())
        except SyntaxError as exc:
            raise BfclDecodeError(f"invalid syntax: {exc.msg}") from None
        calls = []
        for stmt in tree.body:
            if not isinstance(stmt, ast.Expr):
                raise BfclDecodeError("not a call statement")
            calls.append(_call(stmt.value))
        return calls
    if style == "python_mistral":
        return _parse_python_list(_wrap_list(result.replace("\\_", "_")), allow_bare=False)
    if style == "python_extract":
        m = re.search(r"\[.*\]", result.replace("\n", ""))
        return _parse_python_list(_wrap_list(m.group() if m else result), allow_bare=False)
    if style == "python_fenced":
        text = result
        if "```" in text:
            text = text.split("```")[1]
            if text.startswith("python"):
                text = text[len("python"):]
        return _parse_python_list(_wrap_list(text.strip()), allow_bare=False)
    if style == "python_strip":
        return _parse_python_list(result.strip().strip("[]'"), allow_bare=True)
    # "python": newlines removed, brackets added when missing; leading spaces stay (BFCL: unexpected indent)
    return _parse_python_list(_wrap_list(result), allow_bare=False)
