// Progress of long work, at info level and only for work that takes over a
// second: a phase that is still running after 1 s says "NAME ...", then
// "NAME: N s" every 5 s after that, and "NAME: done in X s" when it ends. Work under a
// second prints nothing. Thread-safe; phases may nest.
#pragma once

#include <memory>
#include <string>

namespace stof {

class ProgressPhase {
public:
    explicit ProgressPhase(std::string name);
    ~ProgressPhase();
    ProgressPhase(const ProgressPhase&) = delete;
    ProgressPhase& operator=(const ProgressPhase&) = delete;

private:
    struct State;
    std::shared_ptr<State> state_;
};

}  // namespace stof
