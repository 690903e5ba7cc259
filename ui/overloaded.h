#pragma once
// std::visit over lambdas: std::visit(Overloaded{[](A&) {...}, [](B&) {...}}, variant).
namespace ls::ui {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace ls::ui
