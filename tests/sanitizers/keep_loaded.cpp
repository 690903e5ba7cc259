// Preloaded into every test of the asan preset (tests/CMakeLists.txt): dlclose does nothing, so a shared
// library stays mapped until the process ends. LeakSanitizer looks for leaks at exit, after the Vulkan loader
// has dlclose'd Mesa's driver and layers; without this their allocations show as "<unknown module>" frames,
// which no suppression can name, and tests/sanitizers/lsan.supp could only hide all leaks or none.
extern "C" int dlclose(void*) { return 0; }
