#pragma once
// What `lorastudio --version` reports: the project's version (CMake's project VERSION), the git commit the
// binary was built from and the build type. Its definition, build_info.cpp, is generated in the build folder
// by app/build_info.cmake at every build; the file is rewritten only when the commit or the tree's state
// changes, so a new commit recompiles that one file and relinks the app, nothing else.
namespace ls::app {

struct BuildInfo {
  const char* version;     // "0.1.0"
  const char* commit;      // short hash, "-dirty" appended when tracked files differ from it; "unknown"
                           // when built outside a git checkout (a source tarball) or without git
  const char* build_type;  // CMAKE_BUILD_TYPE: "Release", "RelWithDebInfo", ...
};

const BuildInfo& build_info();

}  // namespace ls::app
