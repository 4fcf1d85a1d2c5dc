"""Write tests/pytorch_face/fixtures/torch_api_surface.json: PyTorch 2.13's public names in four groups.

The groups are ``torch`` (functions, user-facing classes, dtypes and constants), ``Tensor`` (methods and
properties), ``nn.functional`` and ``nn`` (the ``nn.Module`` subclasses exported by ``torch.nn``). A name is
public when it has no leading underscore and is not left out by a rule of LEFT_OUT (re-exported modules,
typing helpers, build flags, removed functions, classes user code never constructs). EXCLUSIONS marks names
that stay in the surface but are deliberately not expected of Lucid, each with its reason; only the
device-specific ones (CUDA, MPS, XPU and other accelerators or vendor kernel libraries) leave the
denominator of the coverage percentage. Every rule is data below, so a reader sees every reason.

The only file of the repository that imports torch; run it once with PyTorch 2.13 installed, from the
repository root, and commit the JSON (never PyTorch):

    /work/torchvenv/bin/python scripts/torch_api_surface.py     # or: pip install torch==2.13.0 && python ...

Then ``python scripts/api_coverage.py`` writes docs/api-coverage.md from it.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import types
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "pytorch_face" / "fixtures" / "torch_api_surface.json"
TORCH_VERSION = "2.13"
GROUPS = ("torch", "Tensor", "nn.functional", "nn")

# issue 33's measure leaves these whole APIs out of the surface (as it leaves out CUDA): reasons shared by their rules
SPARSE = "sparse layouts (COO/CSR/CSC/BSR/BSC) and their ops: left out of the surface by issue 33's measure"
QUANTIZED = "quantized tensors, dtypes and kernels: left out of the surface by issue 33's measure"
JIT = "TorchScript IR and type-comment parsing (JIT): left out of the surface by issue 33's measure"
_SPARSE_TORCH = ("sparse_*", "*smm", "spmm", "hspmm", "saddmm", "sspaddmm", "*indices_copy", "values_copy",
                 "resize_as_sparse_")  # fmt: skip
_QUANTIZED_TORCH = ("quantize_*", "quantized_*", "Q*Storage", "q_*", "qint*", "quint*", "qscheme", "per_channel_*",
                    "per_tensor_*", "fake_quantize_*", "dequantize", "int_repr", "empty_quantized",
                    "choose_qparams_optimized", "fused_moving_avg_obs_fake_quant")  # fmt: skip
_JIT_TORCH = ("JITException", "import_ir_module*", "parse_ir", "parse_schema", "parse_type_comment",
              "merge_type_from_type_comment", "unify_type_list")  # fmt: skip
_SPARSE_TENSOR = ("*indices", "coalesce", "is_coalesced", "is_sparse*", "dense_dim", "sparse_*", "to_sparse*",
                  "values", "smm", "sspaddmm", "resize_as_sparse_")  # fmt: skip
_QUANTIZED_TENSOR = ("q_*", "qscheme", "dequantize", "int_repr", "is_quantized")

# Names that are not public API at all: they are neither counted nor expected. Glob pattern -> reason.
LEFT_OUT: dict[str, dict[str, str]] = {
    "torch": {
        "TYPE_CHECKING": "typing helper (typing.TYPE_CHECKING re-exported)",
        "USE_GLOBAL_DEPS": "build flag of the import machinery",
        "USE_RTLD_GLOBAL_WITH_LIBTORCH": "build flag of the import machinery",
        "PRIVATE_OPS": "internal tuple of private op names",
        "has_lapack": "deprecated build flag (torch.backends.*.is_available() replaces it)",
        "has_mkl": "deprecated build flag (torch.backends.mkl.is_available() replaces it)",
        "has_openmp": "deprecated build flag (torch.backends.openmp.is_available() replaces it)",
        "has_spectral": "deprecated build flag",
        "classproperty": "internal helper re-exported from torch._utils (not in torch.__all__)",
        "get_file_path": "internal helper re-exported from torch._utils_internal (not in torch.__all__)",
        "prepare_multiprocessing_environment": "internal helper from torch._utils_internal (not in torch.__all__)",
        "profiler_allow_cudagraph_cupti_lazy_reinit_cuda12": "internal profiler flag (not in torch.__all__)",
        "eig": "removed in PyTorch 1.9: calling it raises and points to torch.linalg.eig",
        "lstsq": "removed in PyTorch 1.9: calling it raises and points to torch.linalg.lstsq",
        "matrix_rank": "removed in PyTorch 1.9: calling it raises and points to torch.linalg.matrix_rank",
        "solve": "removed in PyTorch 1.9: calling it raises and points to torch.linalg.solve",
        "symeig": "removed in PyTorch 1.9: calling it raises and points to torch.linalg.eigh",
        # classes that user code never constructs or calls (the group counts "classes users call")
        "*Type": "TorchScript type-system binding re-exported from torch._C, not a class user code constructs",
        "Script*": "TorchScript runtime binding re-exported from torch._C (user code goes through torch.jit)",
        "LiteScriptModule": "TorchScript mobile runtime binding re-exported from torch._C",
        "StaticModule": "TorchScript static runtime binding re-exported from torch._C",
        "AliasDb": "TorchScript IR binding re-exported from torch._C",
        "Argument": "TorchScript schema binding re-exported from torch._C",
        "ArgumentSpec": "TorchScript IR binding re-exported from torch._C",
        "CompleteArgumentSpec": "TorchScript IR binding re-exported from torch._C",
        "Block": "TorchScript IR binding re-exported from torch._C",
        "Graph": "TorchScript IR binding re-exported from torch._C",
        "Node": "TorchScript IR binding re-exported from torch._C",
        "Value": "TorchScript IR binding re-exported from torch._C",
        "Use": "TorchScript IR binding re-exported from torch._C",
        "Gradient": "TorchScript IR binding re-exported from torch._C",
        "GraphExecutorState": "TorchScript IR binding re-exported from torch._C",
        "ExecutionPlan": "TorchScript IR binding re-exported from torch._C",
        "Code": "TorchScript IR binding re-exported from torch._C",
        "CallStack": "TorchScript IR binding re-exported from torch._C",
        "ErrorReport": "TorchScript compiler binding re-exported from torch._C",
        "FileCheck": "TorchScript IR test utility re-exported from torch._C",
        "FunctionSchema": "dispatcher schema binding re-exported from torch._C",
        "OperatorInfo": "dispatcher binding re-exported from torch._C",
        "IODescriptor": "TorchScript binding re-exported from torch._C",
        "Capsule": "TorchScript binding re-exported from torch._C",
        "CompilationUnit": "TorchScript compilation unit (torch.jit's), not constructed by user code",
        "ScriptFunction": "TorchScript function object (torch.jit's), made by torch.jit.script",
        "ConcreteModuleType": "TorchScript module-type binding re-exported from torch._C",
        "ConcreteModuleTypeBuilder": "TorchScript module-type binding re-exported from torch._C",
        "DeepCopyMemoTable": "TorchScript serialization binding re-exported from torch._C",
        "SerializationStorageContext": "serialization internal re-exported from torch._C",
        "DeserializationStorageContext": "serialization internal re-exported from torch._C",
        "PyTorchFileReader": "serialization internal re-exported from torch._C (torch.load is the API)",
        "PyTorchFileWriter": "serialization internal re-exported from torch._C (torch.save is the API)",
        "TracingState": "torch.jit.trace internal re-exported from torch._C",
        "ModuleDict": "TorchScript module container binding from torch._C (torch.nn.ModuleDict is the API)",
        "ParameterDict": "TorchScript module container binding from torch._C (torch.nn.ParameterDict is the API)",
        "BufferDict": "TorchScript module container binding re-exported from torch._C",
        "DispatchKey": "dispatcher internal re-exported from torch._C",
        "DispatchKeySet": "dispatcher internal re-exported from torch._C",
        "ExcludeDispatchKeyGuard": "dispatcher internal re-exported from torch._C",
        "AggregationType": "torch.monitor enum re-exported from torch._C",
        "AVG": "torch.monitor enum value re-exported from torch._C",
        "SUM": "torch.monitor enum value re-exported from torch._C",
        "LoggerBase": "internal logging binding re-exported from torch._C",
        "LockingLogger": "internal logging binding re-exported from torch._C",
        "NoopLogger": "internal logging binding re-exported from torch._C",
        "ThroughputBenchmark": "benchmark internal behind torch.utils.ThroughputBenchmark",
        "BenchmarkConfig": "benchmark internal behind torch.utils.ThroughputBenchmark",
        "BenchmarkExecutionStats": "benchmark internal behind torch.utils.ThroughputBenchmark",
        "StorageBase": "base class of the typed storages, not constructed by user code",
        "FatalError": "internal exception re-exported from torch._C",
        # issue 33 measures "leaving out CUDA, sparse, quantized, JIT/FX and internals": those APIs are rules here
        **dict.fromkeys(_SPARSE_TORCH, SPARSE),
        **dict.fromkeys(_QUANTIZED_TORCH, QUANTIZED),
        **dict.fromkeys(_JIT_TORCH, JIT),
    },
    "Tensor": {
        "eig": "removed in PyTorch 1.9: calling it raises and points to torch.linalg.eig",
        "lstsq": "removed in PyTorch 1.9: calling it raises and points to torch.linalg.lstsq",
        "solve": "removed in PyTorch 1.9: calling it raises and points to torch.linalg.solve",
        "symeig": "removed in PyTorch 1.9: calling it raises and points to torch.linalg.eigh",
        "reinforce": "removed with PyTorch 0.4's stochastic functions: calling it points to torch.distributions",
        **dict.fromkeys(_SPARSE_TENSOR, SPARSE),
        **dict.fromkeys(_QUANTIZED_TENSOR, QUANTIZED),
    },
    "nn.functional": {
        "BroadcastingList*": "TorchScript typing helper",
        "Callable": "typing helper (collections.abc.Callable re-exported)",
        "Optional": "typing helper (typing.Optional re-exported)",
        "DType": "typing helper (alias of int used in annotations)",
        "TYPE_CHECKING": "typing helper (typing.TYPE_CHECKING re-exported)",
        "Tensor": "torch.Tensor re-exported for annotations (counted in the Tensor group)",
        "boolean_dispatch": "TorchScript helper from torch._jit_internal",
        "handle_torch_function": "torch.overrides helper re-exported (counted under torch.overrides)",
        "has_torch_function*": "torch.overrides helper re-exported from torch._C",
        "assert_int_or_pair": "internal argument-checking helper",
        "GRID_SAMPLE_*_MODES": "internal tables of grid_sample's argument values",
        "*_notes": "docstring fragments (dicts of note text)",
    },
    "nn": {},
}

# Names in the surface that Lucid is not expected to have. Glob pattern -> (reason, device_specific). A
# device-specific name leaves the denominator; any other exclusion still counts as missing.
EXCLUSIONS: dict[str, dict[str, tuple[str, bool]]] = {
    "torch": {
        "cudnn_*": ("cuDNN kernel (NVIDIA GPUs)", True),
        "miopen_*": ("MIOpen kernel (AMD GPUs)", True),
        "mkldnn_*": ("oneDNN vendor kernel, reached through the ordinary op", True),
        "fbgemm_*": ("FBGEMM vendor kernel (x86 quantized GEMM)", True),
        "*_gpu_*": ("CUDA autocast setting (torch.autocast(device_type=...) is the API)", True),
        "*_ipu_*": ("IPU (Graphcore) autocast setting", True),
        "*_xla_*": ("XLA device autocast setting", True),
        "is_vulkan_available": ("Vulkan backend probe", True),
        "Stream": ("accelerator stream (CUDA/XPU/MPS queues)", True),
        "Event": ("accelerator event (CUDA/XPU/MPS queues)", True),
        "AcceleratorError": ("error raised by accelerator runtimes", True),
        "OutOfMemoryError": ("device allocator error (torch.cuda.OutOfMemoryError)", True),
    },
    "Tensor": {
        "cuda": ("moves to a CUDA device", True),
        "is_cuda": ("CUDA device probe", True),
        "xpu": ("moves to an Intel XPU", True),
        "is_xpu": ("XPU device probe", True),
        "ipu": ("moves to a Graphcore IPU", True),
        "is_ipu": ("IPU device probe", True),
        "mtia": ("moves to a Meta MTIA device", True),
        "is_mtia": ("MTIA device probe", True),
        "is_maia": ("MAIA device probe", True),
        "is_mps": ("MPS device probe", True),
        "is_xla": ("XLA device probe", True),
        "is_vulkan": ("Vulkan device probe", True),
        "is_mkldnn": ("oneDNN vendor layout probe", True),
        "to_mkldnn": ("converts to the oneDNN vendor layout", True),
        "record_stream": ("CUDA caching-allocator stream bookkeeping", True),
    },
    "nn.functional": {
        "scaled_mm": ("FP8 matmul, CUDA kernels only", True),
        "scaled_grouped_mm": ("FP8 grouped matmul, CUDA kernels only", True),
        "grouped_mm": ("grouped matmul, CUDA kernels only", True),
        "ScalingType": ("enum of scaled_mm's CUDA scaling recipes", True),
        "SwizzleType": ("enum of scaled_mm's CUDA memory swizzles", True),
    },
    "nn": {},
}


def _match(name: str, rules: dict[str, Any]) -> str | None:
    """The first pattern of ``rules`` that ``name`` matches (exact names before globs), or None."""
    if name in rules:
        return name
    return next((p for p in rules if any(c in p for c in "*?[") and fnmatch.fnmatchcase(name, p)), None)


def _kind(obj: Any, torch: Any) -> str:
    """What a name is: dtype, class, function, method, property or constant."""
    if isinstance(obj, torch.dtype):
        return "dtype"
    if inspect.isclass(obj):
        return "class"
    if isinstance(obj, property | types.GetSetDescriptorType | types.MemberDescriptorType):
        return "property"
    if callable(obj) or isinstance(obj, types.MethodDescriptorType):
        return "function"
    return "constant"


def _candidates(torch: Any) -> dict[str, dict[str, str]]:
    """Every name without a leading underscore of each group, with its kind (modules dropped)."""
    nn = torch.nn
    out: dict[str, dict[str, str]] = {g: {} for g in GROUPS}
    for group, space in (("torch", torch), ("nn.functional", nn.functional)):
        for name in dir(space):
            obj = getattr(space, name)
            if name.startswith("_") or isinstance(obj, types.ModuleType):
                continue
            out[group][name] = _kind(obj, torch)
    for name in dir(torch.Tensor):
        if not name.startswith("_"):
            raw = inspect.getattr_static(torch.Tensor, name)
            out["Tensor"][name] = "property" if _kind(raw, torch) in ("property", "constant") else "method"
    for name in dir(nn):
        obj = getattr(nn, name)
        if not name.startswith("_") and inspect.isclass(obj) and issubclass(obj, nn.Module):
            out["nn"][name] = "class"
    return out


def _unused(rules: dict[str, Any], names: set[str]) -> list[str]:
    """Patterns of ``rules`` that match no name (a stale rule would hide a change in PyTorch)."""
    return [p for p in rules if not any(_match(n, {p: None}) for n in names)]


def build() -> dict[str, Any]:
    """The surface as a JSON-ready dict: per group its names, exclusions and left-out names with reasons."""
    import torch

    if not torch.__version__.startswith(TORCH_VERSION + "."):
        raise SystemExit(f"torch_api_surface: needs PyTorch {TORCH_VERSION}.x, found {torch.__version__}")
    groups: dict[str, Any] = {}
    for group, found in _candidates(torch).items():
        stale = _unused(LEFT_OUT[group], set(found)) + _unused(EXCLUSIONS[group], set(found))
        if stale:
            raise SystemExit(f"torch_api_surface: rules of group {group!r} match no name: {stale}")
        names, left_out, exclusions = [], [], []
        for name, kind in sorted(found.items()):
            left = _match(name, LEFT_OUT[group])
            if left is not None:
                left_out.append({"name": name, "rule": left, "reason": LEFT_OUT[group][left]})
                continue
            names.append({"name": name, "kind": kind})
            rule = _match(name, EXCLUSIONS[group])
            if rule is not None:
                reason, device = EXCLUSIONS[group][rule]
                exclusions.append({"name": name, "rule": rule, "reason": reason, "device_specific": device})
        groups[group] = {"names": names, "exclusions": exclusions, "left_out": left_out}
    return {
        "torch_version": torch.__version__,
        "generated_by": "scripts/torch_api_surface.py",
        "groups": groups,
    }


def main() -> None:
    """Write the JSON beside the PyTorch-face fixtures and print the size of each group."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated attributes warn when dir() walks them
        surface = build()
    OUT.write_text(json.dumps(surface, indent=1, sort_keys=True) + "\n")
    for group, data in surface["groups"].items():
        device = sum(e["device_specific"] for e in data["exclusions"])
        print(f"{group}: {len(data['names'])} names, {device} device-specific, {len(data['left_out'])} left out")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
