"""dsdiag: measurements for the black magic of distributed training.

The Python side of dsdiag only hooks PyTorch and hands what it sees to the probes' C++ core
(``dsdiag._core``), which writes the per-rank traces ``dsdiag compare`` reads. Start a job
under ``dsdiag run`` (no code change), as ``python3 -m dsdiag.torch SCRIPT``, or call
``dsdiag.torch.instrument()`` before ``torch.distributed.init_process_group``.
"""

__all__ = ["__version__"]

__version__: str

try:
    from dsdiag import _core  # type: ignore[attr-defined, unused-ignore]

    __version__ = _core.version
except ImportError:  # the extension was not built: the package can still be imported
    __version__ = "unknown"
