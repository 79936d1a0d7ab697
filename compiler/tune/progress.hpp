// The tuning progress display: on a terminal one line rewritten in place (stage,
// step i/n, segments measured, gain so far, elapsed and estimated time left, and the
// part of the budget kept for the whole-plan timings to come; in the sweep, the
// kernel's configs timed so far); else one line per stage, when the stage ends, and
// one per kernel of the sweep.
#pragma once

#include "fusion/search.hpp"

#include <cstdio>
#include <string>

namespace stof::tune {

class ProgressLine {
public:
    ProgressLine(std::FILE* out, double budget_s);
    void operator()(const fusion::SearchProgress& p);
    void finish();  // ends the display (the last stage's line)

private:
    std::string line(const fusion::SearchProgress& p) const;
    std::FILE* out_;
    bool tty_;
    double budget_s_;
    std::string stage_;
    fusion::SearchProgress last_;
    bool pending_ = false;
    size_t width_ = 0;
};

}  // namespace stof::tune
