#include "tune/progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <unistd.h>

namespace stof::tune {

ProgressLine::ProgressLine(std::FILE* out, double budget_s) : out_(out), tty_(isatty(fileno(out)) != 0), budget_s_(budget_s) {}

std::string ProgressLine::line(const fusion::SearchProgress& p) const {
    std::string s = fmt::format("tuning {}: {}/{}{}, {} segments timed, {:.1f} us saved, {:.1f} s", p.stage, p.index, p.count,
                                p.space > 0 ? fmt::format(" ({}/{} configs)", p.configs, p.space) : "", p.evaluations,
                                p.gain_us, p.elapsed_s);
    if (p.index > 0 && p.index < p.count && p.space == 0) {
        double left = p.elapsed_s / p.index * (p.count - p.index);
        if (std::isfinite(budget_s_)) left = std::min(left, std::max(0.0, budget_s_ - p.reserve_s - p.elapsed_s));
        s += fmt::format(", ~{:.0f} s left", left);
    }
    if (p.reserve_s > 0 && std::isfinite(budget_s_)) s += fmt::format(" (+{:.0f} s kept for the final check)", p.reserve_s);
    return s;
}

void ProgressLine::operator()(const fusion::SearchProgress& p) {
    if (!tty_ && pending_ && stage_ != p.stage) std::fprintf(out_, "%s\n", line(last_).c_str());
    stage_ = p.stage;
    last_ = p;
    pending_ = true;
    if (!tty_ && p.space > 0 && p.configs == p.space) {  // a line per kernel of the sweep
        std::fprintf(out_, "%s\n", line(p).c_str());
        pending_ = false;
    }
    if (tty_) {
        const std::string s = line(p);
        std::fprintf(out_, "\r%s%s", s.c_str(), std::string(width_ > s.size() ? width_ - s.size() : 0, ' ').c_str());
        width_ = s.size();
    }
    std::fflush(out_);
}

void ProgressLine::finish() {
    if (!pending_) return;
    if (tty_) std::fprintf(out_, "\n");
    else std::fprintf(out_, "%s\n", line(last_).c_str());
    pending_ = false;
    std::fflush(out_);
}

}  // namespace stof::tune
