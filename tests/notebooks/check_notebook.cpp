// Checks that example programs print the notebooks' deterministic outputs, character for character.
//
//   check_notebook NOTEBOOK.txt PROGRAM [NOTEBOOK.txt PROGRAM ...]
//
// NOTEBOOK.txt is a file written by tests/notebooks/extract.py: blocks of lines copied from a
// notebook, each under a header `@@ checked ...` or `@@ skipped ...`. For each pair, PROGRAM is run;
// every checked block must appear in its standard output as whole lines, each block after the
// previous one. With several pairs, the last line counts the matches over all of them. The exit
// status is 1 if any block is missing or any program fails.
#include <sys/wait.h>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Block {
    bool checked;
    std::string header;  // for messages
    std::string text;    // its lines, each ending in '\n'
};

std::vector<Block> read_blocks(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::vector<Block> blocks;
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("@@ ", 0) != 0) continue;  // comments
        Block b;
        b.header = line;
        b.checked = line.rfind("@@ checked ", 0) == 0;
        if (!b.checked && line.rfind("@@ skipped ", 0) != 0) throw std::runtime_error(path + ": bad header: " + line);
        auto bar = line.find(" | ");
        if (bar == std::string::npos) throw std::runtime_error(path + ": no line count in: " + line);
        int n = std::stoi(line.substr(bar + 3));
        for (int i = 0; i < n; ++i) {
            if (!std::getline(in, line)) throw std::runtime_error(path + ": block cut short: " + b.header);
            b.text += line + "\n";
        }
        blocks.push_back(b);
    }
    return blocks;
}

// Runs `program` and returns its standard output; `status` gets its exit status (-1 if it died).
std::string run(const std::string& program, int& status) {
    std::string out;
    std::string command(1, '\'');
    command.append(program).append(1, '\'');
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) throw std::runtime_error("cannot run " + program);
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
    int raw = pclose(pipe);
    status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return out;
}

// The line number (from 1) of byte `pos` in `text`.
std::size_t line_of(const std::string& text, std::size_t pos) {
    std::size_t line = 1;
    for (std::size_t i = 0; i < pos && i < text.size(); ++i) line += text[i] == '\n';
    return line;
}

std::string base_name(const std::string& path) {
    return path.substr(path.find_last_of('/') + 1);
}

// "\n" + text, spelled out so that GCC 12 raises no false -Wrestrict warning.
std::string after_newline(const std::string& text) {
    std::string s(1, '\n');
    return s.append(text);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || argc % 2 == 0) {
        std::cerr << "usage: check_notebook NOTEBOOK.txt PROGRAM [NOTEBOOK.txt PROGRAM ...]\n";
        return 2;
    }
    int total = 0, matched = 0;
    bool ok = true;
    try {
        for (int a = 1; a + 1 < argc; a += 2) {
            const std::string notebook = argv[a], program = argv[a + 1];
            std::vector<Block> blocks = read_blocks(notebook);
            int status = 0;
            // A leading newline lets the first line match like any other: after a '\n'.
            const std::string output = after_newline(run(program, status));
            int checked = 0, found = 0, skipped = 0;
            std::size_t cursor = 0;
            for (const Block& b : blocks) {
                if (!b.checked) {
                    ++skipped;
                    continue;
                }
                ++checked;
                std::size_t pos = output.find(after_newline(b.text), cursor);
                if (pos == std::string::npos) {
                    std::cout << base_name(notebook) << ": not found after output line " << line_of(output, cursor)
                              << " of " << base_name(program) << ": " << b.header << "\n"
                              << b.text;
                    // Where the block's text appears, if only out of order.
                    if (output.find(after_newline(b.text)) != std::string::npos) std::cout << "(it appears earlier)\n";
                    continue;
                }
                ++found;
                cursor = pos + b.text.size();
            }
            std::cout << base_name(notebook) << " (" << base_name(program) << "): " << found << "/" << checked
                      << " deterministic outputs match, " << skipped << " skipped";
            if (status != 0) std::cout << "; the program exited with status " << status;
            std::cout << "\n";
            ok = ok && found == checked && status == 0;
            total += checked;
            matched += found;
        }
    } catch (const std::exception& e) {
        std::cout << "check_notebook: " << e.what() << "\n";
        return 1;
    }
    if (argc > 3)
        std::cout << "notebooks: " << matched << "/" << total << " deterministic outputs match the notebooks\n";
    return ok ? 0 : 1;
}
