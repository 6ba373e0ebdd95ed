"""Targets: parsed once from TVM-style strings, refusing what they do not understand with a
TargetError that names the option or value and lists the known ones; one backend per kind."""

from __future__ import annotations

import re

import pytest

import mlcir
from mlcir.errors import MlcirError, TargetError
from mlcir.target import KINDS, Target
from mlcir.targets import backend_for


def test_targets_parse_and_print():
    assert str(Target.parse("llvm -threads=2 -opt-level=1")) == "llvm -threads=2 -opt-level=1"
    cuda = Target.parse("cuda -arch=sm_80 -threads=64 -format=isa")
    assert (cuda.arch, cuda.threads, dict(cuda.options)) == ("sm_80", 64, {"format": "isa"})
    assert Target.parse("cuda -arch=sm_90a").arch == "sm_90a"
    assert Target.parse(cuda) is cuda


def test_an_unknown_kind_is_refused_with_the_known_ones():
    with pytest.raises(TargetError, match=r"unknown target 'tpu': the kind must be one of "
                                          r"llvm, cuda") as info:
        Target.parse("tpu")
    assert isinstance(info.value, MlcirError) and isinstance(info.value, ValueError)
    with pytest.raises(TargetError, match="the kind must be one of llvm, cuda"):
        Target.parse("")


@pytest.mark.parametrize("option", ["-thread=2", "-bogus=1", "-arch=sm_80", "-triple=x"])
def test_an_unknown_llvm_option_is_refused_with_the_known_ones(option):
    with pytest.raises(TargetError, match=f"unknown option '{re.escape(option)}'; llvm takes "
                                          "-threads, -opt-level, -mtriple, -mcpu, -mattr"):
        Target.parse(f"llvm {option}")


def test_a_triple_cpu_and_features_are_kept_and_matched_by_tuning_records():
    target = Target.parse("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1 -mattr=+sve")
    assert str(target) == "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1 -mattr=+sve"
    assert target.triple == "aarch64-unknown-linux-gnu" and not target.runs_here
    assert target.key == str(target) and target.names_cpu
    host = Target.parse("llvm -mcpu=haswell -mattr=+avx2,-avx512f")
    assert host.triple.startswith("x86_64") and host.runs_here
    assert not Target.parse("llvm").names_cpu


def test_an_unknown_triple_is_refused_with_the_known_ones():
    with pytest.raises(TargetError, match=r"unknown triple 'armv7-linux-gnueabihf'; -mtriple "
                                          r"is one of aarch64-linux-gnu, .*x86_64-linux-gnu"):
        Target.parse("llvm -mtriple=armv7-linux-gnueabihf")


@pytest.mark.parametrize("option, message", [
    ("-mcpu=pentium9", r"unknown CPU 'pentium9' for x86_64-unknown-linux-gnu; -mcpu is one "
                       r"of .*haswell"),
    ("-mtriple=aarch64-linux-gnu -mcpu=haswell", r"unknown CPU 'haswell' for aarch64-unknown-"
                                                 r"linux-gnu; -mcpu is one of .*cortex-a72"),
    ("-mtriple=aarch64-linux-gnu -mattr=+avx2", r"unknown CPU feature '\+avx2' for aarch64.*"
                                                r"the features being .*sve"),
    ("-mattr=avx2", r"unknown CPU feature 'avx2'.*\+feature or -feature"),
])
def test_cpus_and_features_are_those_llvm_knows_for_the_triple(option, message):
    with pytest.raises(TargetError, match=message):
        Target.parse(f"llvm {option}")


def test_an_unknown_cuda_option_is_refused_with_the_known_ones():
    with pytest.raises(TargetError, match="unknown option '-mcpu=sm_80'; cuda takes -arch, "
                                          "-threads, -opt-level, -format"):
        Target.parse("cuda -mcpu=sm_80")


@pytest.mark.parametrize("value", ["abc", "-2", "1.5", ""])
def test_threads_must_be_a_non_negative_integer(value):
    with pytest.raises(TargetError, match=f"'-threads={value}' is not a non-negative integer"):
        Target.parse(f"llvm -threads={value}")


@pytest.mark.parametrize("value", ["9", "4", "-1", "fast"])
def test_opt_level_must_be_0_to_3(value):
    """LLVM aborts the process on -opt-level=9; the parser refuses it first."""
    with pytest.raises(TargetError, match=f"'-opt-level={value}' is (out of range; -opt-level "
                                          "is 0, 1, 2 or 3|not a non-negative integer)"):
        Target.parse(f"llvm -opt-level={value}")


@pytest.mark.parametrize("arch", ["80", "sm80", "sm_8", "compute_80", "sm_80b", "ampere"])
def test_an_unknown_cuda_arch_format_is_refused(arch):
    with pytest.raises(TargetError, match=f"'-arch={arch}' is not a CUDA architecture; -arch is "
                                          r"sm_ and a compute capability \(sm_80, sm_90"):
        Target.parse(f"cuda -arch={arch}")


def test_entry_points_refuse_bad_targets_before_compiling():
    with pytest.raises(TargetError, match=r"'-opt-level=9' is out of range"):
        mlcir.build("func.func @f() { return }", target="llvm -opt-level=9")
    with pytest.raises(TargetError, match=r"unknown option '-bogus=1'"):
        mlcir.tune.default_space("llvm -bogus=1")


def test_every_kind_has_one_backend():
    for kind in KINDS:
        assert backend_for(Target.parse(kind)).kind == kind
    with pytest.raises(TargetError, match="no backend for target kind 'tpu'; known: llvm, cuda"):
        backend_for(Target(kind="tpu"))


@pytest.mark.parametrize("text", ["llvm -threads=2 -threads=4", "llvm -mcpu=znver4 -mcpu=haswell",
                                  "cuda -arch=sm_80 -arch=sm_90"])
def test_an_option_given_twice_is_refused(text):
    key = text.split()[1].split("=")[0]
    with pytest.raises(TargetError, match=f"option {key} is given twice; give it once"):
        Target.parse(text)
