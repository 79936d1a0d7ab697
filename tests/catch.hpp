// One include for Catch2 v2 (Debian 12) and v3 (Ubuntu 24.04).
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
namespace Catch {
using Detail::Approx;  // v3 spelling: Catch::Approx
namespace Matchers {
inline auto ContainsSubstring(const std::string& s) { return Contains(s); }  // v3 spelling
}  // namespace Matchers
}  // namespace Catch
#endif
