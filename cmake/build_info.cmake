# Run at every build (cmake -P): writes OUTPUT, a .cpp with edgeprobe's git commit and
# whether the tree differed from it, rewritten only when that changes, so a commit
# recompiles this one file and ccache keeps every other object.
# In: SOURCE_DIR, OUTPUT, TEMPLATE, BUILD_TYPE, COMPILER.
set(commit "unknown")
set(dirty "false")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND NOT head STREQUAL "")
    set(commit "${head}")
    # Tracked files changed since the commit (untracked ones are not part of the build's source).
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE rc2 OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(rc2 EQUAL 0 AND NOT changes STREQUAL "")
      set(dirty "true")
    endif()
  endif()
endif()
set(EDGEPROBE_GIT_COMMIT "${commit}")
set(EDGEPROBE_GIT_DIRTY "${dirty}")
set(EDGEPROBE_BUILD_TYPE "${BUILD_TYPE}")
set(EDGEPROBE_COMPILER "${COMPILER}")
# configure_file leaves OUTPUT untouched (and its time stamp) when the text is the same.
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
