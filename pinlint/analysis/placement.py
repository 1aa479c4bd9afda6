"""Where a torch module's registered buffers are: with the module, wherever the code has put it.

``self.register_buffer("marker", torch.zeros(1))`` keeps a tensor that ``module.to(device)`` and
``module.cuda()`` move with the module (a plain ``self.total = torch.zeros(n)`` field stays where it
was made). So the device of a buffer (``self.marker.device``, a common way for a module to ask where
it runs) is known only where the code says where the module is:

- an object this scope constructed (``acc = Accumulator()``) and has not moved since holds its
  buffers as ``__init__`` made them ("made");
- after ``acc.cpu()`` or ``acc.to("cpu")`` they are on the CPU ("cpu");
- anything else (``.cuda()``, ``.to(device)``, the object handed to a call nothing here explains, stored
  in a field, or an object nothing says how it was built) leaves the buffer's device unknown, as it
  was before buffers were followed (an unknown device counts as a GPU for a non-blocking copy).

The buffer is kept on the object as the field ``BUFFER + name``, and where the object is as the field
``PLACEMENT``; neither is an attribute the code can name. ``domain.join`` keeps a placement only
where both sides agree, so a class's fields (joined over its methods) never hold one.
"""

from __future__ import annotations

from typing import Optional

from .domain import BUFFER, PLACEMENT, UNKNOWN, Alternatives, Const, DeviceSpec, Host, Instance, Items, Mapping, Seq, Value

MADE = Const.of("made")
ON_CPU = Const.of("cpu")
MOVED = Const.of("moved")

# Methods of `torch.nn.Module` that hand the module back (python.toml's `returns_self`) and leave its
# tensors where they are; the others there (`cuda`, `to`, `apply`, `to_empty`, ...) may move them.
# Any other method leaves them: a library method that moves a module hands it back.
_KEEPS_PLACE = frozenset({"train", "eval", "half", "float", "double", "bfloat16", "requires_grad_"})


def is_module(ev, value: Value) -> bool:
    """An object of a class of the checked code deriving from a library class whose objects keep
    registered buffers (python.toml's ``buffer_registrars``); asked for every escape, kept per class."""
    if not isinstance(value, Instance):
        return False
    project = ev.module.project
    found = project.module_classes.get(value.klass)
    if found is None:
        info = project.class_info(value.klass)
        table = ev.tables.python.get("buffer_registrars", {}) if info is not None else {}
        found = project.module_classes[value.klass] = bool(table) and \
            any(base in table for base in info.library_classes())
    return found


def made(ev, value: Value) -> Value:
    """An object just constructed by the checked code: its buffers are where ``__init__`` made them
    (unless ``__init__`` moved it: ``self.to(device)``)."""
    if is_module(ev, value) and value.field(PLACEMENT) is None:
        return value.with_fields({PLACEMENT: MADE})
    return value


def _each_object(value: Value, change) -> Value:
    """``value`` with ``change`` applied to every object in it (through tuples, lists, dicts and
    alternatives): the same value where nothing changed."""
    if isinstance(value, Instance):
        return change(value)
    if isinstance(value, Items):
        items = tuple(_each_object(v, change) for v in value.items)
        return value if items == value.items else Items(items, value.names)
    if isinstance(value, Seq):
        element = _each_object(value.element, change)
        return value if element == value.element else Seq(element)
    if isinstance(value, Mapping):
        entries = tuple((k, _each_object(v, change)) for k, v in value.entries)
        rest = _each_object(value.rest, change) if value.rest is not None else None
        if entries == value.entries and rest == value.rest:
            return value
        return Mapping(entries, rest, value.optional)
    if isinstance(value, Alternatives):
        options = frozenset(_each_object(v, change) for v in value.options)
        return value if options == value.options else Alternatives(options)
    return value


def unplaced(value: Value) -> Value:
    """The same object, nothing known of where it is (nor of the objects it holds)."""
    def strip(instance: Instance) -> Instance:
        fields = tuple((k, unplaced(v)) for k, v in instance.fields if k != PLACEMENT)
        return instance if fields == instance.fields else Instance(instance.klass, fields)
    return _each_object(value, strip)


def forget_everywhere(ev, values) -> None:
    """Objects that may now be moved by code nothing here explains (handed to it, stored): every name
    of this scope holding a module of their classes, or a container holding one, says it was moved
    (``MOVED``: where to, unknown). Marked even where nothing was known of where it was, so that a
    caller reading back what a callee's analysis at large did to its object learns it too."""
    classes = set()

    def note(instance: Instance) -> Instance:
        if is_module(ev, instance):
            classes.add(instance.klass)
        return instance

    def mark(instance: Instance) -> Instance:
        if instance.klass in classes and instance.field(PLACEMENT) != MOVED:
            return instance.with_fields({PLACEMENT: MOVED})
        return instance

    for value in values:
        _each_object(value, note)
    if not classes:
        return
    from .state import MUTATED
    env = ev.state.env
    for key, value in list(env.items()):
        if key.startswith("$"):
            continue
        marked = _each_object(value, mark)
        if marked is not value:
            env[key] = marked
            env[MUTATED + key.split(".")[0]] = Const.of(True)  # a caller's object, changed here


def joined(a: Optional[Value], b: Optional[Value]) -> Optional[Value]:
    """Where a module is after two paths: the same place, or moved (somewhere unknown) if either path
    moved it; a constructed object joined with one nothing is known of (a class's fields) is unknown."""
    if a == b:
        return a
    if a is None and b == MADE or b is None and a == MADE:
        return None
    return MOVED


def copied_back(current: Value, value: Value) -> Value:
    """A callee's object read back over the caller's: a callee analysed without knowing where the
    module was (its analysis at large) and that did not move it leaves it where the caller had it."""
    if isinstance(value, Instance) and isinstance(current, Instance) and value.klass == current.klass and \
            value.field(PLACEMENT) is None and current.field(PLACEMENT) is not None:
        return value.with_fields({PLACEMENT: current.field(PLACEMENT)})
    return value


def buffer(base: Instance, attr: str) -> Optional[Value]:
    """``module.name`` of a registered buffer: the tensor where the object's placement says, else
    unknown; None when ``name`` is no buffer of the object."""
    value = base.field(BUFFER + attr)
    if value is None:
        return None
    placement = base.field(PLACEMENT)
    if placement == MADE:
        return value
    if placement == ON_CPU and isinstance(value, Host) and value.library == "torch":
        return value
    return UNKNOWN


def after_method(ev, receiver: Instance, name: str, args) -> Instance:
    """Where the module is after ``receiver.name(*args)`` of its library base class (or of something
    else nothing here explains: a field holding a library function)."""
    if name in _KEEPS_PLACE or not _hands_back(ev, receiver, name):
        return receiver
    if name == "cpu" and not args.positional and not args.keywords:
        return receiver.with_fields({PLACEMENT: ON_CPU})
    if name == "to" and not args.star and _names_the_cpu(args):
        return receiver.with_fields({PLACEMENT: ON_CPU})
    return receiver.with_fields({PLACEMENT: MOVED})


def _hands_back(ev, receiver: Instance, name: str) -> bool:
    table = ev.tables.python.get("returns_self", {})
    info = ev.module.project.class_info(receiver.klass)
    return info is not None and any(name in table.get(base, ()) for base in info.library_classes())


def _names_the_cpu(args) -> bool:
    target = args.positional[0][1] if args.positional else None
    if "device" in args.keywords:
        target = args.keywords["device"][1]
    if target is None:
        return False
    return target == ON_CPU or isinstance(target, DeviceSpec) and target.cuda is False and not target.other
