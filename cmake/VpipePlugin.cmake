# vpipe_add_filter_plugin(NAME SOURCES...): a filter plugin, a shared module
# that `vpipe` loads (--plugin, or from its plugin directory). It links no vpipe
# library: vpipe's functions come from the program at load time, so the
# plugin's filters register in the program's own registry. It carries its own
# static CUDA runtime (the program's is not exported); both drive the same
# device context, so streams and device pointers pass between them.
function(vpipe_add_filter_plugin name)
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE vpipe::plugin_api)
  set_target_properties(${name} PROPERTIES PREFIX "" CUDA_RUNTIME_LIBRARY Static
                        POSITION_INDEPENDENT_CODE ON)
endfunction()
