#pragma once
// A fixture tensor's raw values (tests/fixtures/**/expected.safetensors, written by the fixture scripts).
#include <cstring>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace ls::test {

template <class T>
std::vector<T> tensor_values(const model::SafeTensors& st, const std::string& name) {
  const auto& info = st.at(name);
  std::vector<T> v(info.bytes.size() / sizeof(T));
  std::memcpy(v.data(), info.bytes.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace ls::test
