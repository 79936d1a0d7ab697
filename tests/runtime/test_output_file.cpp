// stof::cli::check_output_file: a bad -o is refused before any work, naming why.
#include "catch.hpp"
#include "stof/cli_util.hpp"
#include "test_util.hpp"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

TEST_CASE("an output file is checked before any work: directories, missing or unwritable directories", "[cpu][cli]") {
    const fs::path dir = fs::path(stof::test::binary_dir()) / "test_tmp" / "output_file";
    fs::remove_all(dir);
    fs::create_directories(dir / "sub");
    stof::cli::check_output_file((dir / "model.plan").string(), "-o");  // a new file in a directory
    stof::cli::check_output_file((dir / "sub" / "x.plan").string(), "-o");
    std::ofstream(dir / "old.plan") << "x";
    stof::cli::check_output_file((dir / "old.plan").string(), "-o");  // an existing file is replaced
    stof::test::require_error([&] { stof::cli::check_output_file((dir / "sub").string(), "-o"); },
                              "is a directory; name the file to write, e.g. ");
    stof::test::require_error([&] { stof::cli::check_output_file((dir / "sub").string() + "/", "-o"); }, "is a directory");
    stof::test::require_error([&] { stof::cli::check_output_file((dir / "missing" / "m.plan").string(), "-o"); },
                              "/missing does not exist");
    stof::test::require_error([&] { stof::cli::check_output_file("", "-o"); }, "empty file name");
    CHECK(fs::directory_iterator(dir / "sub") == fs::directory_iterator());  // nothing was written
}
