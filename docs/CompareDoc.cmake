# Fails when the committed generated doc differs from the one ODS produces.
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${GENERATED} ${COMMITTED}
                RESULT_VARIABLE differs)
if(differs)
  message(FATAL_ERROR "${COMMITTED} is stale or missing: the ODS definitions "
    "changed. Run `cmake --build build --target anvil-doc` and commit the result.")
endif()
