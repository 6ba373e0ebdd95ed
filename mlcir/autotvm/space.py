"""Config spaces: the knobs a template defines, and one chosen point of them (a config).

TVM's AutoTVM names and printing, on mlcir schedules. A template asks :func:`get_config` for
its config and calls ``cfg.define_split`` / ``define_knob`` / ``define_reorder`` /
``define_annotate``. While a task is created the config is a :class:`ConfigSpace` in *collect*
mode: each ``define_*`` adds a knob and ``cfg[name]`` answers the knob's first entity, so the
template runs through once. When a config is measured or applied it is a :class:`ConfigEntity`:
``define_*`` only checks that the knob is there and ``cfg[name]`` is the chosen entity.

Index order is TVM's: the first knob varies fastest (``index % len(first knob)``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from mlcir.errors import MlcirError
from mlcir.schedule import Schedule
from mlcir.schedule.instruction import LoopRV


class ConfigError(MlcirError, ValueError):
    """A knob defined wrongly (twice, no choices, an unknown policy) or missing from a config."""


# -- entities: one choice of one knob -------------------------------------------------------------
@dataclass(frozen=True)
class SplitEntity:
    """Factors of a split, outermost first; the outer one is ``-1`` (whatever is left)."""

    size: tuple[int, ...]

    def apply(self, sch: Schedule, block: Any, loop: LoopRV) -> list[LoopRV]:  # noqa: ARG002 - TVM's signature
        """Split ``loop`` of ``block`` by these factors. A split whose inner factors divide the
        extent goes through ``sample_perfect_tile`` with this decision, so its tile sizes are
        ``transform.tune.knob``s of the schedule's transform script; other splits (policy
        ``power2``) make a partial last tile."""
        extent = sch.get(loop).extent
        inner = list(self.size[1:])
        product = math.prod(inner)
        if extent % product == 0 and all(f >= 1 for f in inner):
            decision = [extent // product] + inner
            # every divisor is an option of the tune.knob (autotvm.transform_view)
            factors = sch.sample_perfect_tile(loop, len(decision), max_innermost_factor=extent,
                                              decision=decision)
            return sch.split(loop, factors)
        return sch.split(loop, [None] + inner)

    @property
    def val(self) -> list[int]:
        return list(self.size)

    def to_json(self) -> list[int]:
        return list(self.size)

    def __repr__(self) -> str:
        return str(list(self.size))


@dataclass(frozen=True)
class OtherOptionEntity:
    """One value of a ``define_knob``."""

    val: Any

    def to_json(self) -> Any:
        return self.val

    def __repr__(self) -> str:
        return str(self.val)


@dataclass(frozen=True)
class ReorderEntity:
    """A permutation: the new order, as indices into the axes given to ``define_reorder``."""

    perm: tuple[int, ...]

    def apply(self, sch: Schedule, block: Any,  # noqa: ARG002 - TVM's signature
              axes: Sequence[LoopRV]) -> list[LoopRV]:
        """Reorder ``axes`` by this permutation; returns them in their new order."""
        if len(axes) != len(self.perm):
            raise ConfigError(f"reorder entity of {len(self.perm)} axes applied to {len(axes)}")
        ordered = [axes[i] for i in self.perm]
        sch.reorder(*ordered)
        return ordered

    @property
    def val(self) -> list[int]:
        return list(self.perm)

    def to_json(self) -> list[int]:
        return list(self.perm)

    def __repr__(self) -> str:
        return str(list(self.perm))


ANNOTATIONS = ("none", "unroll", "vec")


@dataclass(frozen=True)
class AnnotateEntity:
    """One annotation per axis: ``"none"``, ``"unroll"`` or ``"vec"``."""

    anns: tuple[str, ...]

    def apply(self, sch: Schedule, block: Any,  # noqa: ARG002 - TVM's signature
              axes: Sequence[LoopRV]) -> None:
        """Unroll or vectorize each axis as chosen."""
        if len(axes) != len(self.anns):
            raise ConfigError(f"annotate entity of {len(self.anns)} axes applied to {len(axes)}")
        for axis, ann in zip(axes, self.anns):
            if ann == "unroll":
                sch.unroll(axis)
            elif ann == "vec":
                sch.vectorize(axis)

    @property
    def val(self) -> list[str]:
        return list(self.anns)

    def to_json(self) -> list[str]:
        return list(self.anns)

    def __repr__(self) -> str:
        return str(list(self.anns))


Entity = SplitEntity | OtherOptionEntity | ReorderEntity | AnnotateEntity


# -- spaces: every choice of one knob --------------------------------------------------------------
def get_factors(n: int) -> list[int]:
    """The divisors of ``n``, ascending."""
    small = [i for i in range(1, math.isqrt(n) + 1) if n % i == 0]
    return sorted(set(small + [n // i for i in small]))


def get_pow2s(n: int) -> list[int]:
    """The powers of two up to ``n``."""
    return [1 << i for i in range(n.bit_length()) if 1 << i <= n]


class KnobSpace:
    """Every entity of one knob, in index order."""

    kind = ""
    entities: list[Any]

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, index: int) -> Any:
        return self.entities[index]


class SplitSpace(KnobSpace):
    """The ways to split a loop of ``product`` iterations in ``num_outputs`` loops (TVM's
    enumeration: every choice of inner factors whose product is at most ``product`` and
    either divides it or, for ``power2``/``verbose``, leaves a partial outer tile)."""

    kind = "sp"

    def __init__(self, product: int, policy: str, num_outputs: int, max_factor: int | None,
                 filter: Callable[[SplitEntity], bool] | None):
        if policy not in ("factors", "power2", "verbose"):
            raise ConfigError(f"define_split: unknown policy {policy!r} (factors, power2, verbose)")
        if num_outputs < 2:
            raise ConfigError(f"define_split: num_outputs must be >= 2, got {num_outputs}")
        self.product, self.policy, self.num_outputs = product, policy, num_outputs
        if policy == "factors":
            factors = get_factors(product)
        elif policy == "power2":
            factors = get_pow2s(product)
        else:
            factors = sorted(set(get_factors(product)) | set(get_pow2s(product)))
        if max_factor is not None:
            factors = [f for f in factors if f <= max_factor]
        self.entities = []
        for inner in itertools.product(factors, repeat=num_outputs - 1):
            prod = math.prod(inner)
            if prod > product or (policy == "factors" and product % prod):
                continue
            entity = SplitEntity((-1, *inner))
            if filter is None or filter(entity):
                self.entities.append(entity)
        # TVM's order: the innermost factor varies slowest.
        self.entities.sort(key=lambda e: e.size[:0:-1])

    def __repr__(self) -> str:
        return (f"Split(policy={self.policy}, product={self.product}, "
                f"num_outputs={self.num_outputs}) len={len(self)}")


class OtherOptionSpace(KnobSpace):
    """The candidates of a ``define_knob``."""

    kind = "ot"

    def __init__(self, candidates: Sequence[Any]):
        self.entities = [OtherOptionEntity(c) for c in candidates]

    def __repr__(self) -> str:
        return f"OtherOption({[e.val for e in self.entities]}) len={len(self)}"


class ReorderSpace(KnobSpace):
    """Orders of ``n`` axes: ``identity``, ``all`` (every permutation), ``interval`` (every
    permutation of the axes in ``[start, end)``) or ``candidate`` (the orders given)."""

    kind = "re"

    def __init__(self, axes: Sequence[Any], policy: str, **kwargs: Any):
        n = len(axes)
        self.policy = policy
        if policy == "identity":
            perms = [tuple(range(n))]
        elif policy == "all":
            perms = list(itertools.permutations(range(n)))
        elif policy == "interval":
            start, end = kwargs["interval"]
            perms = [tuple(range(start)) + p + tuple(range(end, n))
                     for p in itertools.permutations(range(start, end))]
        elif policy == "candidate":
            perms = []
            for order in kwargs["candidate"]:
                try:
                    perms.append(tuple(_position(axes, a) for a in order))
                except ValueError:
                    raise ConfigError("define_reorder: a candidate order names an axis that is "
                                      "not among the axes given") from None
        else:
            raise ConfigError(f"define_reorder: unknown policy {policy!r} "
                              "(identity, all, interval, candidate)")
        self.entities = [ReorderEntity(p) for p in perms]

    def __repr__(self) -> str:
        return f"Reorder(policy={self.policy}) len={len(self)}"


def _position(axes: Sequence[Any], axis: Any) -> int:
    for i, a in enumerate(axes):
        if a is axis or a == axis:
            return i
    raise ValueError(axis)


class AnnotateSpace(KnobSpace):
    """Annotations of ``n`` axes: ``try_unroll`` (none/unroll each), ``try_vec`` (none/vec on
    the innermost), ``try_unroll_vec`` (none/unroll each, none/vec on the innermost), or a
    list of the choices per axis."""

    kind = "an"

    def __init__(self, axes: Sequence[Any], policy: str | Sequence[Sequence[str]]):
        n = len(axes)
        self.policy = policy if isinstance(policy, str) else "custom"
        if policy == "try_unroll":
            choices = [["none", "unroll"]] * n
        elif policy == "try_vec":
            choices = [["none"]] * (n - 1) + [["none", "vec"]]
        elif policy == "try_unroll_vec":
            choices = [["none", "unroll"]] * (n - 1) + [["none", "unroll", "vec"]]
        elif not isinstance(policy, str) and len(policy) == n:
            choices = [list(c) for c in policy]
        else:
            raise ConfigError(f"define_annotate: unknown policy {policy!r} (try_unroll, "
                              "try_vec, try_unroll_vec, or a list of choices per axis)")
        for c in choices:
            bad = [a for a in c if a not in ANNOTATIONS]
            if bad:
                raise ConfigError(f"define_annotate: unknown annotation {bad[0]!r} "
                                  f"({', '.join(ANNOTATIONS)})")
        self.entities = [AnnotateEntity(tuple(a)) for a in itertools.product(*choices)]

    def __repr__(self) -> str:
        return f"Annotate(policy={self.policy}) len={len(self)}"


# -- the config of a template ----------------------------------------------------------------------
def _extent(name: str, axis: Any) -> int:
    """The extent of the loop ``axis`` of a ``define_split``: an int, a ``sch.get(loop)``, or a
    loop of a Schedule that the template holds in a local variable (found in its frame)."""
    if isinstance(axis, int) and not isinstance(axis, bool):
        return axis
    if hasattr(axis, "extent"):
        return int(axis.extent)
    if isinstance(axis, LoopRV):
        import inspect

        frame = inspect.currentframe()
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if isinstance(value, Schedule) and axis in value._values:
                    return value.get(axis).extent
            frame = frame.f_back
    raise ConfigError(f"define_split({name!r}): cannot tell the extent of {axis!r}; give an int "
                      "or sch.get(loop), or keep the loop's Schedule in a local variable of the "
                      "template")


class ConfigSpace:
    """The knobs of a template (collect mode; see the module docstring). ``len(space)`` is the
    number of configs, ``space.get(i)`` the config of index ``i``."""

    def __init__(self) -> None:
        self.space_map: dict[str, KnobSpace] = {}
        self._entity_map: dict[str, Any] = {}
        self._collect = True
        self.flop = 0.0
        self.is_fallback = False

    # defining knobs
    def _add(self, name: str, space: KnobSpace) -> None:
        if name in self.space_map:
            raise ConfigError(f"knob {name!r} is defined twice in this template")
        if len(space) == 0:
            raise ConfigError(f"knob {name!r} has no choices (an empty candidate list, or a "
                              "filter/max_factor that leaves nothing)")
        self.space_map[name] = space
        self._entity_map[name] = space[0]

    def define_split(self, name: str, axis: Any, policy: str = "factors", num_outputs: int = 2,
                     max_factor: int | None = None,
                     filter: Callable[[SplitEntity], bool] | None = None) -> None:
        """A knob of the factors splitting ``axis`` (a loop, ``sch.get(loop)`` or an extent)."""
        if self._collect:
            self._add(name, SplitSpace(_extent(name, axis), policy, num_outputs, max_factor,
                                       filter))
        else:
            self._check_defined(name)

    def define_knob(self, name: str, candidates: Sequence[Any]) -> None:
        """A knob taking one of ``candidates``."""
        if self._collect:
            self._add(name, OtherOptionSpace(list(candidates)))
        else:
            self._check_defined(name)

    def define_reorder(self, name: str, axes: Sequence[Any], policy: str = "all",
                       **kwargs: Any) -> None:
        """A knob of the order of ``axes`` (see :class:`ReorderSpace` for the policies)."""
        if self._collect:
            self._add(name, ReorderSpace(list(axes), policy, **kwargs))
        else:
            self._check_defined(name)

    def define_annotate(self, name: str, axes: Sequence[Any],
                        policy: str | Sequence[Sequence[str]]) -> None:
        """A knob of how to annotate ``axes`` (unroll, vectorize; see :class:`AnnotateSpace`)."""
        if self._collect:
            self._add(name, AnnotateSpace(list(axes), policy))
        else:
            self._check_defined(name)

    def add_flop(self, flop: float) -> None:
        """Count ``flop`` operations of this template (otherwise the kernel's are counted)."""
        self.flop += flop

    def raise_error(self, msg: str) -> None:
        """Reject this config (it is recorded as an instantiation error, not measured)."""
        raise ConfigError(msg)

    def _check_defined(self, name: str) -> None:
        if name not in self._entity_map:
            raise ConfigError(f"this config has no knob {name!r} (knobs: "
                              f"{', '.join(self._entity_map) or 'none'}); was the template "
                              "changed since the config was made?")

    # reading knobs
    def __getitem__(self, name: str) -> Any:
        if name not in self._entity_map:
            raise ConfigError(f"no knob {name!r} is defined (knobs: "
                              f"{', '.join(self._entity_map) or 'none'})")
        return self._entity_map[name]

    def __len__(self) -> int:
        return math.prod(len(s) for s in self.space_map.values())

    @property
    def range_length(self) -> int:
        return len(self)

    @property
    def dims(self) -> list[int]:
        """The number of choices of each knob, in definition order."""
        return [len(s) for s in self.space_map.values()]

    def point2knob(self, index: int) -> list[int]:
        """The entity index of each knob in the config of index ``index``."""
        knobs = []
        for dim in self.dims:
            knobs.append(index % dim)
            index //= dim
        return knobs

    def knob2point(self, knobs: Sequence[int]) -> int:
        """The config index of the entity indices ``knobs``."""
        index, stride = 0, 1
        for k, dim in zip(knobs, self.dims):
            index += k * stride
            stride *= dim
        return index

    def get(self, index: int) -> "ConfigEntity":
        """The config of index ``index`` (0 to ``len(self) - 1``)."""
        if not 0 <= index < len(self):
            raise ConfigError(f"config index {index} is out of range: the space has "
                              f"{len(self)} configs")
        entities = {name: space[k] for (name, space), k
                    in zip(self.space_map.items(), self.point2knob(index))}
        return ConfigEntity(index, entities, dict(self.space_map))

    def __iter__(self) -> Iterator[str]:
        return iter(self.space_map)

    def items(self) -> Any:
        return self.space_map.items()

    def __repr__(self) -> str:
        res = f"ConfigSpace (len={len(self)}, range_length={self.range_length}, space_map=\n"
        for i, (name, space) in enumerate(self.space_map.items()):
            res += f"  {i:2d} {name}: {space}\n"
        return res + ")"


class ConfigEntity(ConfigSpace):
    """One config: a chosen entity for every knob (``cfg[name].val``, ``.apply``). ``index``
    is its place in the space (-1 when it was read from a record of another space)."""

    def __init__(self, index: int, entity_map: dict[str, Any],
                 space_map: dict[str, KnobSpace] | None = None):
        super().__init__()
        self._collect = False
        self.index = index
        self.code_hash = None
        self._entity_map = dict(entity_map)
        self.space_map = dict(space_map or {})

    def __len__(self) -> int:  # a config is one point
        return 1

    @property
    def entity_map(self) -> dict[str, Any]:
        return dict(self._entity_map)

    def get_flatten_feature(self) -> list[float]:
        """The knobs as numbers, for the ``knob`` feature of the XGBoost tuner: a split's
        factors as log2, a knob's value (or its index when not a number), a reorder's
        permutation, an annotation's choices as indices."""
        out: list[float] = []
        for name, entity in self._entity_map.items():
            if isinstance(entity, SplitEntity):
                out += [math.log2(f) if f > 0 else -1.0 for f in entity.size[1:]]
            elif isinstance(entity, OtherOptionEntity):
                v = entity.val
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    out.append(float(v))
                else:
                    space = self.space_map.get(name)
                    out.append(float(space.entities.index(entity)) if space else 0.0)
            elif isinstance(entity, ReorderEntity):
                out += [float(p) for p in entity.perm]
            else:
                out += [float(ANNOTATIONS.index(a)) for a in entity.anns]
        return out

    def to_json_dict(self) -> dict[str, Any]:
        """TVM's record form: ``{"index", "code_hash", "entity": [[name, kind, value]...]}``."""
        kinds = {SplitEntity: "sp", OtherOptionEntity: "ot", ReorderEntity: "re",
                 AnnotateEntity: "an"}
        return {"index": self.index, "code_hash": self.code_hash,
                "entity": [[name, kinds[type(e)], e.to_json()]
                           for name, e in self._entity_map.items()]}

    @staticmethod
    def from_json_dict(data: dict[str, Any]) -> "ConfigEntity":
        """The config of a record (see :meth:`to_json_dict`)."""
        entities: dict[str, Any] = {}
        for name, kind, value in data["entity"]:
            if kind == "sp":
                entities[name] = SplitEntity(tuple(int(v) for v in value))
            elif kind == "ot":
                entities[name] = OtherOptionEntity(value)
            elif kind == "re":
                entities[name] = ReorderEntity(tuple(int(v) for v in value))
            elif kind == "an":
                entities[name] = AnnotateEntity(tuple(value))
            else:
                raise ConfigError(f"unknown knob kind {kind!r} of knob {name!r}")
        return ConfigEntity(int(data.get("index", -1)), entities)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfigEntity) and self._entity_map == other._entity_map

    def __hash__(self) -> int:
        return hash(tuple(self._entity_map.items()))

    def __repr__(self) -> str:
        body = ", ".join(f"('{n}', {e!r})" for n, e in self._entity_map.items())
        return f"[{body}],{self.code_hash},{self.index}"


class FallbackConfigEntity(ConfigSpace):
    """The config used when no record matches: every knob takes its first choice (the template
    runs as in collect mode). ``is_fallback`` is True."""

    def __init__(self) -> None:
        super().__init__()
        self.is_fallback = True
