#include "plan_check.hpp"

#include "gpu_util.hpp"
#include "plan/plan_writer.hpp"
#include "stof/compare.hpp"
#include "stof/runtime.hpp"

namespace stof::test {

void check_plan_output(const plan::Plan& plan, const std::string& path, const std::map<std::string, Tensor>& feeds,
                       const std::string& output, const Tensor& want, double tolerance) {
    plan::write_plan(plan, path);
    Runtime rt(path);
    for (const auto& [name, t] : feeds) rt.set_input(name, t);
    CUDA_REQUIRE(cudaMemset(rt.output_address(0), 0xff, want.bytes.size()));
    rt.run();
    const Comparison cmp = compare(rt.output(output), want, tolerance, tolerance);
    INFO(describe(cmp, want, tolerance, tolerance));
    CHECK(cmp.ok);
}

}  // namespace stof::test
