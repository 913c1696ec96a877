"""Clear messages for arguments of the wrong type (issue #56, mechanism 2).

pybind11 checks each call against the bound C++ signature and, when no form
fits, raises a TypeError listing the signatures ("incompatible function
arguments"). :func:`explain_type_errors` wraps every function, method,
constructor and property setter of the extension module so that such an
error becomes an :class:`adgraph.ArgumentError` (a TypeError) naming the
function, the argument, what it got and what it accepts::

    Graph.placeholder(): argument "shape": expected a sequence of integers
    (List[int]), got int 3

The message is built from the signature pybind11 reports and the actual
arguments; nothing is written per binding. A wrapped call costs one Python
call more.
"""

from __future__ import annotations

import functools
import numbers
import re
import types
import typing
from collections.abc import Callable

from ._errors import ArgumentError

_Form = list[tuple[str, str, bool]]  # (name, annotation, has a default) a parameter

_MARKERS = ("incompatible function arguments", "incompatible constructor arguments")
# The dunder methods wrapped; operators return NotImplemented instead.
_DUNDERS = ("__init__", "__call__", "__getitem__", "__setitem__")


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """Splits ``text`` at ``sep`` outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, c in enumerate(text):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _parameters(inside: str) -> _Form:
    """(name, annotation, has_default) of each parameter of a signature."""
    out = []
    for part in _split_top_level(inside):
        head, _, default = part.partition(" = ")
        name, _, annotation = head.partition(": ")
        out.append((name.strip(), annotation.strip() or "object", bool(default)))
    return out


def _forms(text: str, name: str) -> list[_Form]:
    """The parameter lists of the signatures in pybind11's message, or in a
    function's docstring (``name(...) -> ...``, numbered when overloaded)."""
    forms = []
    for line in text.splitlines():
        # A message numbers its forms; a docstring starts with the name.
        pattern = r"\s+\d+\. [\w.:]*\(" if not name else \
            r"(\d+\. )?([\w.]*\.)?" + re.escape(name) + r"\("
        if not re.match(pattern, line):
            continue
        start = line.index("(")
        depth = 0
        for end in range(start, len(line)):
            depth += {"(": 1, ")": -1}.get(line[end], 0)
            if depth == 0:
                break
        forms.append(_parameters(line[start + 1:end]))
    return forms


def _readable(annotation: str) -> str:
    """pybind11's annotation with C++ names in their Python spelling."""
    text = re.sub(r"\bhandle\b", "object", annotation)
    text = re.sub(r"adgraph::python::Py(\w+)", r"\1", text)
    text = re.sub(r"\b(?:adgraph\.)?_adgraph\.", "", text)
    return re.sub(r"\badgraph::(?:\w+::)*", "", text)


def _generic(annotation: str) -> tuple[str, list[str]]:
    """(outer, [inner annotations]) of ``List[int]`` and the like."""
    m = re.fullmatch(r"([\w.:]+)\[(.*)\]", annotation)
    if not m:
        return annotation, []
    return m.group(1), _split_top_level(m.group(2))


def _is_sequence(value: object) -> bool:
    return (hasattr(value, "__len__") and hasattr(value, "__getitem__")
            and not isinstance(value, (str, bytes, dict)))


def _class_named(name: str, module: types.ModuleType) -> type | None:
    last = re.split(r"\.|::", name)[-1]
    for candidate in (last, last[2:] if last.startswith("Py") else None):
        found = getattr(module, candidate, None) if candidate else None
        if isinstance(found, type):
            return found
    return None


_SCALARS: dict[str, tuple[Callable[[typing.Any], bool], str]] = {
    "int": (lambda v: isinstance(v, numbers.Integral)
            or (hasattr(type(v), "__index__") and not isinstance(v, float)),
            "an integer"),
    "float": (lambda v: isinstance(v, numbers.Real) or hasattr(type(v), "__float__"),
              "a real number"),
    "bool": (lambda v: v is None or isinstance(v, numbers.Number)
             or type(v).__name__ == "bool_", "True or False"),
    "str": (lambda v: isinstance(v, (str, bytes)), "a string"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "dict": (lambda v: isinstance(v, dict), "a dict"),
    "tuple": (lambda v: isinstance(v, tuple), "a tuple"),
    "function": (callable, "a callable"),
    "None": (lambda v: v is None, "None"),
}


_PLURALS = {"an integer": "integers", "a real number": "real numbers", "a string": "strings",
            "True or False": "booleans", "a Value": "Values"}


def _check(value: typing.Any, annotation: str, module: types.ModuleType) -> tuple[bool, str]:
    """(accepted, what is accepted in words); accepted is True when the
    annotation is not understood (the message then stays generic)."""
    outer, inner = _generic(annotation)
    if outer in _SCALARS:
        test, words = _SCALARS[outer]
        return test(value), words
    if outer in ("Optional", "typing.Optional") and inner:
        ok, words = _check(value, inner[0], module)
        return value is None or ok, f"None or {words}"
    if outer in ("Union", "typing.Union"):
        results = [_check(value, a, module) for a in inner]
        return any(ok for ok, _ in results), " or ".join(w for _, w in results)
    if outer in ("List", "Sequence", "typing.List", "typing.Sequence") and inner:
        item = _check(None, inner[0], module)[1]
        words = "a sequence of " + _PLURALS.get(item, f"items that are {item}")
        if not _is_sequence(value):
            return False, words
        return all(_check(v, inner[0], module)[0] for v in value), words
    if outer in ("Dict", "typing.Dict"):
        return isinstance(value, dict), "a dict"
    if outer in ("Callable", "typing.Callable"):
        return callable(value), "a callable"
    cls = _class_named(outer, module)
    if cls is not None:
        return isinstance(value, cls), f"{'an' if cls.__name__[0] in 'AEIOU' else 'a'} " \
                                       f"{cls.__name__}"
    return True, _readable(annotation)


def _shown(value: object) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _problem(form: _Form, args: typing.Sequence[object], kwargs: dict[str, object],
             module: types.ModuleType) -> str | None:
    """What is wrong with (args, kwargs) for one form, or None."""
    names = [name for name, _, _ in form]
    if len(args) > len(form):
        return f"takes at most {len(form)} arguments ({', '.join(names)}), got {len(args)}"
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            return f"unexpected keyword argument {key!r}"
        if key in bound:
            return f"argument {key!r} given twice"
        bound[key] = value
    for name, annotation, has_default in form:
        if name not in bound:
            if not has_default:
                return f"argument {name!r} is missing"
            continue
        ok, words = _check(bound[name], annotation, module)
        if not ok:
            spelled = _readable(annotation)
            if spelled not in words:
                words += f" ({spelled})"
            return f"argument {name!r}: expected {words}, got {_shown(bound[name])}"
    return None


def _message(label: str, forms: list[_Form], args: typing.Sequence[object],
             kwargs: dict[str, object], module: types.ModuleType, skip_self: bool,
             show_forms: bool = True, required: bool = True) -> str | None:
    """The message for a call no form takes; unless ``required``, None when
    every argument looks acceptable (then the original error stands)."""
    # Methods: `self` is bound already; the user did not pass it.
    # (Constructors' forms in pybind11's messages do not list it.)
    forms = [form[1:] if form and form[0][0] == "self" else form for form in forms]
    if skip_self:
        args = args[1:]
    problems = [_problem(form, args, kwargs, module) for form in forms]
    if not required and not any(problems):
        return None
    shown = ", ".join([_shown(a) for a in args] + [f"{k}={_shown(v)}" for k, v in kwargs.items()])

    def signature(form: _Form) -> str:
        return "(" + ", ".join(f"{n}: {_readable(a)}" for n, a, _ in form) + ")"
    if len(forms) == 1 and problems[0]:
        takes = f"; it takes {signature(forms[0])}" if show_forms else ""
        return f"{label}(): {problems[0]}{takes}"
    lines = [f"{label}(): no form takes ({shown}):"]
    for form, problem in zip(forms, problems):
        lines.append(f"  {signature(form)}: {problem or 'an argument cannot be converted'}")
    return "\n".join(lines)


def _wrap(function: Callable[..., typing.Any], label: str, module: types.ModuleType,
          skip_self: bool,
          name_of: Callable[[tuple[typing.Any, ...]], str] | None = None
          ) -> Callable[..., typing.Any]:
    @functools.wraps(function)
    def checked(*args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        try:
            return function(*args, **kwargs)
        except TypeError as error:
            # Raised by this very call (not by Python code it called back):
            # pybind11's signature check, or a converter's own TypeError
            # ("object of type 'Value' has no len()").
            if error.__traceback__.tb_next is not None:  # type: ignore[union-attr]
                raise
            text = str(error)
            pybind = any(m in text for m in _MARKERS)
            forms = _forms(text, "") if pybind else _forms(function.__doc__ or "",
                                                           function.__name__)
            # add_node's own form means nothing to the caller of an op.
            shown = name_of(args) if name_of else label
            if not forms:
                if not pybind:
                    raise
                raise ArgumentError(f"{shown}: {text}") from None
            message = _message(shown, forms, args, kwargs, module, skip_self,
                               show_forms=name_of is None, required=pybind)
            if message is None:
                raise
            raise ArgumentError(message) from None
    return checked


def _is_pybind(function: typing.Any) -> bool:
    return type(function).__name__ == "builtin_function_or_method" and \
        (function.__doc__ or "").startswith(function.__name__ + "(")


def _wrap_class(cls: type, module: types.ModuleType) -> None:
    for name, member in list(vars(cls).items()):
        if name.startswith("__") and name not in _DUNDERS:
            continue
        label = cls.__name__ if name == "__init__" else f"{cls.__name__}.{name}"
        if type(member).__name__ == "instancemethod" and _is_pybind(member.__func__):
            setattr(cls, name, _wrap(member.__func__, label, module, skip_self=True))
        elif isinstance(member, staticmethod) and _is_pybind(member.__func__):
            setattr(cls, name, staticmethod(_wrap(member.__func__, label, module, False)))
        elif isinstance(member, property) and member.fset is not None \
                and type(member.fset).__name__ == "builtin_function_or_method":
            setter = _wrap(member.fset, label + " =", module, skip_self=True)
            setattr(cls, name, property(member.fget, setter, member.fdel, member.__doc__))


def explain_type_errors(module: types.ModuleType) -> None:
    """Wraps, in place, every pybind11 function of ``module`` and every
    method, constructor and property setter of its classes (see the module
    docstring). ``add_node`` is named after the op it adds: the generated
    op functions (``adgraph.sum`` …) call it."""
    for name, member in list(vars(module).items()):
        if isinstance(member, type) and type(member).__name__ == "pybind11_type":
            _wrap_class(member, module)
        elif _is_pybind(member):
            name_of = None
            if name == "add_node":
                def name_of(args: tuple[typing.Any, ...]) -> str:
                    return args[1] if len(args) > 1 and isinstance(args[1], str) else "add_node"
            # Private helpers (_loop) back a public function (loop).
            setattr(module, name, _wrap(member, name.lstrip("_"), module, False, name_of))
