# The wheel's layout (DSDIAG_WHEEL, pyproject.toml): everything under the package, so that
# `pip uninstall dsdiag` takes it all away and nothing lands at site-packages' root.
#
#   dsdiag/*.py, dsdiag/torch/...          the package (python/dsdiag)
#   dsdiag/_core<EXT_SUFFIX>                the probes' torch-free core
#   dsdiag/bin/dsdiag                       the torch-free CLI (dsdiag/_cli.py execs it)
#   dsdiag/_startup/sitecustomize.py        the start-up hook `dsdiag run` puts on PYTHONPATH
#   dsdiag/_hook_src/...                    DDP's C++ hook, compiled on first use against the
#                                           user's torch (dsdiag/torch/ddp/_native.py)
set(dsdiag_pkg dsdiag)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/dsdiag/ DESTINATION ${dsdiag_pkg}
  FILES_MATCHING PATTERN "*.py" PATTERN "py.typed" PATTERN "__pycache__" EXCLUDE)
install(TARGETS dsdiag_core_py LIBRARY DESTINATION ${dsdiag_pkg})
install(TARGETS dsdiag RUNTIME DESTINATION ${dsdiag_pkg}/bin)
install(FILES ${PROJECT_SOURCE_DIR}/python/sitecustomize/sitecustomize.py
  DESTINATION ${dsdiag_pkg}/_startup)
# The hook's source keeps its include path (python/core/...) below _hook_src.
install(FILES ${PROJECT_SOURCE_DIR}/python/torch_ext/ddp_comm_hook.cc
  DESTINATION ${dsdiag_pkg}/_hook_src/python/torch_ext)
install(FILES ${PROJECT_SOURCE_DIR}/python/core/ddp_hook_api.h
  DESTINATION ${dsdiag_pkg}/_hook_src/python/core)
