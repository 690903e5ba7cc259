# docs/cli.md is what `lorastudio --help` and each subcommand's --help print, so that it never drifts
# from the binary. Run by the build (docs/CMakeLists.txt):
#   cmake -DBINARY=PATH -DOUT=FILE -P docs/cli_md.cmake     writes FILE (build/docs/cli.md)
#   cmake -DBINARY=PATH -DCHECK=FILE -P docs/cli_md.cmake   fails, saying how to update it, when FILE
#                                                           differs from what it would write (cli_docs_test)
# The subcommands are read from the "Subcommands:" section of the top-level help. The binary's path in the
# usage lines is written as `lorastudio`.
cmake_minimum_required(VERSION 3.25)

function(help_of out_var)
  execute_process(COMMAND "${BINARY}" ${ARGN} --help OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${BINARY} ${ARGN} --help exited with ${rc}: ${err}")
  endif()
  string(REPLACE "${BINARY}" "lorastudio" text "${text}")
  string(REGEX REPLACE "\n+$" "" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

help_of(top)
set(md "# Command line reference\n\n")
string(APPEND md "<!-- Generated from the binary's --help by docs/cli_md.cmake; do not edit. The build writes "
       "build/.../docs/cli.md, the test cli_docs_test fails when this file differs from it, and "
       "`cmake --build BUILD_DIR --target update_cli_docs` copies it here. -->\n\n")
string(APPEND md "Every command and option of `lorastudio`, as `--help` prints them. The guides: "
       "[getting started](getting-started.md), [real models](real-models.md), "
       "[data format](data-format.md), [scaling out](scale-out.md).\n\n")
string(APPEND md "## lorastudio\n\n```text\n${top}\n```\n")

# The subcommands: the indented words under "Subcommands:" (CLI11's help layout).
string(REGEX MATCH "\nSubcommands:\n.*" section "${top}")
string(REPLACE "\n" ";" section_lines "${section}")
foreach(line IN LISTS section_lines)
  if(line MATCHES "^  ([a-z][a-z0-9-]*)( |$)")
    set(sub "${CMAKE_MATCH_1}")
    help_of(sub_help ${sub})
    string(APPEND md "\n## lorastudio ${sub}\n\n```text\n${sub_help}\n```\n")
  endif()
endforeach()

if(DEFINED OUT)
  file(WRITE "${OUT}.tmp" "${md}")
  file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
  file(REMOVE "${OUT}.tmp")
elseif(DEFINED CHECK)
  file(READ "${CHECK}" committed)
  if(NOT committed STREQUAL md)
    message(FATAL_ERROR "${CHECK} is not what the binary's --help prints now. Update it with\n"
            "  cmake --build BUILD_DIR --target update_cli_docs\n"
            "and commit it. (It is made by docs/cli_md.cmake.)")
  endif()
  message(STATUS "${CHECK} matches the binary's --help")
else()
  message(FATAL_ERROR "docs/cli_md.cmake: give -DOUT=FILE or -DCHECK=FILE")
endif()
