// Bad inputs a new user tried (sizes that overflow, values int64 cannot hold, in-place edits of saved
// tensors, mixed dtypes ...), each run in a child process: none may crash, hang or pass silently;
// each must throw the clear error asserted here.
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <typeinfo>

#include "golden.hpp"
#include "xgrad/xgrad.hpp"

namespace nn = xgrad::nn;
using xgrad::Shape;
using xgrad::Tensor;

namespace {

/// What a case did in its child process.
struct Outcome {
    bool exited = false;  // false: killed by a signal (a crash) or by the time limit (a hang)
    int code = -1;        // exit code when it exited
    int signal = 0;       // the signal that ended it otherwise
    std::string kind;     // "invalid_argument", "out_of_memory", "runtime_error", "none" or "other"
    std::string message;  // what() of the exception
    std::string err;      // what the case wrote to stderr
};

/// Reads everything from `fd` until EOF (true) or until nothing came for `deadline_ms` (false).
bool drain(int fd, int deadline_ms, std::string& out) {
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, deadline_ms) <= 0) return false;
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return true;
        out.append(buf, static_cast<std::size_t>(n));
    }
}

/// Runs `f` in a child process (with 10 seconds to finish) and reports what happened there.
Outcome in_child(const std::function<void()>& f) {
    int result[2], err[2];
    REQUIRE(::pipe(result) == 0);
    REQUIRE(::pipe(err) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(result[0]);
        ::close(err[0]);
        ::dup2(err[1], 2);
        std::string report;
        try {
            f();
            report = "none\n";
        } catch (const xgrad::OutOfMemoryError& e) {
            report = std::string("out_of_memory\n") + e.what();
        } catch (const std::invalid_argument& e) {
            report = std::string("invalid_argument\n") + e.what();
        } catch (const std::runtime_error& e) {
            report = std::string("runtime_error\n") + e.what();
        } catch (const std::exception& e) {
            report = std::string("other\n") + typeid(e).name() + ": " + e.what();
        }
        (void)!::write(result[1], report.data(), report.size());
        std::fflush(stderr);
        ::_exit(0);
    }
    ::close(result[1]);
    ::close(err[1]);
    std::string report, stderr_text;
    const bool finished = drain(result[0], 10000, report);  // EOF: the child exited or crashed
    drain(err[0], finished ? 1000 : 0, stderr_text);
    ::close(result[0]);
    ::close(err[0]);
    int status = 0;
    if (!finished) {  // nothing for 10 s and still running: a hang
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return Outcome{false, -1, SIGKILL, "hang", "", stderr_text};
    }
    ::waitpid(pid, &status, 0);
    Outcome o;
    o.exited = WIFEXITED(status);
    o.code = o.exited ? WEXITSTATUS(status) : -1;
    o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    const auto nl = report.find('\n');
    o.kind = nl == std::string::npos ? report : report.substr(0, nl);
    o.message = nl == std::string::npos ? "" : report.substr(nl + 1);
    o.err = stderr_text;
    return o;
}

/// Checks that `f`, in a child process, throws an error of `kind` whose message is `expected` exactly.
void check_error(const std::function<void()>& f, const std::string& kind, const std::string& expected) {
    const Outcome o = in_child(f);
    INFO("kind: " << o.kind << ", signal " << o.signal << ", message: " << o.message << ", stderr: " << o.err);
    REQUIRE(o.exited);
    CHECK(o.code == 0);
    CHECK(o.kind == kind);
    CHECK(o.message == expected);
}

/// PyTorch's message for `key` from hardening.txt's `# message <key> <text>` lines.
std::string pytorch_message(const std::string& key) {
    std::ifstream in(golden::dir() + "/hardening.txt");
    std::string line;
    while (std::getline(in, line)) {
        const std::string tag = "# message " + key + " ";
        if (line.rfind(tag, 0) == 0) return line.substr(tag.size());
    }
    FAIL("no message " << key << " in hardening.txt");
    return "";
}

constexpr std::int64_t k32 = std::int64_t{1} << 32;

}  // namespace

TEST_CASE("shapes whose element count overflows int64 throw, naming the op and the shape") {
    const std::string too_many =
        "the shape (4294967296, 4294967296) has too many elements: their number overflows int64";
    check_error([] { xgrad::zeros({k32, k32}); }, "invalid_argument", "zeros: " + too_many);
    check_error([] { xgrad::ones({k32, k32}); }, "invalid_argument", "ones: " + too_many);
    check_error([] { xgrad::full({k32, k32}, 1.0); }, "invalid_argument", "full: " + too_many);
    check_error([] { xgrad::empty({k32, k32}); }, "invalid_argument", "empty: " + too_many);
    check_error([] { xgrad::randn({k32, k32}); }, "invalid_argument", "randn: " + too_many);
    check_error([] { xgrad::rand({k32, k32}); }, "invalid_argument", "rand: " + too_many);
    check_error([] { xgrad::zeros({1}).expand({k32, k32}).sum(); }, "invalid_argument", "expand: " + too_many);
    check_error(
        [] {
            xgrad::zeros({4}).reshape({k32, k32});
        },
        "invalid_argument",
        "reshape: shape (4294967296, 4294967296) is invalid for input of shape (4,) (4 elements): its size "
        "overflows int64");
    check_error(
        [] {
            xgrad::zeros({4}).view({k32, k32, -1});
        },
        "invalid_argument",
        "view: shape (4294967296, 4294967296, -1) is invalid for input of shape (4,) (4 elements): its size "
        "overflows int64");
    // Broadcasting two expanded views, and a product of two expanded views.
    check_error(
        [] {
            xgrad::zeros({1}).expand({k32, 1}) + xgrad::zeros({1}).expand({1, k32});
        },
        "invalid_argument", "add: " + too_many);
    check_error(
        [] {
            xgrad::matmul(xgrad::zeros({1, 1}).expand({k32, 1}), xgrad::zeros({1, 1}).expand({1, k32}));
        },
        "invalid_argument", "matmul: " + too_many);
    const std::int64_t k62 = std::int64_t{1} << 62;
    check_error(
        [=] {
            Tensor big = xgrad::zeros({1}).expand({k62});
            xgrad::cat({big, big});
        },
        "invalid_argument", "cat: the concatenated size along dimension 0 overflows int64");
}

TEST_CASE("shapes whose byte count overflows throw; memory the system refuses is an OutOfMemoryError") {
    check_error(
        [] {
            xgrad::zeros({std::int64_t{1} << 31, std::int64_t{1} << 31});
        },
        "invalid_argument",
        "zeros: the shape (2147483648, 2147483648) of torch.float32 is too large: its size in bytes "
        "overflows int64");
    check_error(
        [] {
            xgrad::zeros({std::int64_t{1} << 40, std::int64_t{1} << 10});
        },
        "out_of_memory", "zeros: out of memory: tried to allocate 4.00 PiB (4503599627370496 bytes) on the CPU");
    check_error(
        [] {
            xgrad::randn({std::int64_t{1} << 40, std::int64_t{1} << 10}, xgrad::kFloat64);
        },
        "out_of_memory", "randn: out of memory: tried to allocate 8.00 PiB (9007199254740992 bytes) on the CPU");
    // One type for the CPU and the CUDA allocator, a std::runtime_error.
    static_assert(std::is_base_of_v<std::runtime_error, xgrad::OutOfMemoryError>);
}

TEST_CASE("values an int64 tensor cannot hold throw PyTorch's error") {
    const std::string msg = pytorch_message("full_nan");  // value cannot be converted to type int64_t without overflow
    CHECK(msg == pytorch_message("fill_inf"));
    check_error([] { xgrad::full({2}, NAN, xgrad::kInt64); }, "invalid_argument", "full: " + msg);
    check_error([] { xgrad::tensor({1e30}, xgrad::kInt64); }, "invalid_argument", "tensor: " + msg);
    check_error(
        [] {
            xgrad::from_vector(std::vector<double>{1.0, INFINITY}, {2}, xgrad::kInt64);
        },
        "invalid_argument", "from_vector: " + msg);
    check_error(
        [] {
            Tensor t = xgrad::zeros({2}, xgrad::kInt64);
            t.fill_(INFINITY);
        },
        "invalid_argument", "fill_: " + msg);
    check_error([] { xgrad::arange(-1e19, -1e19 + 1e9, 1e8, xgrad::kInt64); }, "invalid_argument", "arange: " + msg);
    check_error([] { xgrad::tensor({2.5}).item<std::int8_t>(); }, "none", "");
    check_error([] { xgrad::tensor({1e10}).item<int>(); }, "invalid_argument",
                "item: value cannot be converted to type int without overflow");
    check_error([] { xgrad::tensor({NAN}).item<std::int64_t>(); }, "invalid_argument",
                "item: value cannot be converted to type int64_t without overflow");
    check_error([] { xgrad::tensor({1e300}, xgrad::kFloat64).item<float>(); }, "invalid_argument",
                "item: value cannot be converted to type float without overflow");
}

TEST_CASE("in-place writes into an expanded tensor throw PyTorch's error, and leave its memory alone") {
    const std::string msg = pytorch_message("overlap");
    const std::string where = " (The tensor of shape (3, 2) has stride 0 along dimension 0.)";
    const Tensor mask = xgrad::tensor({1.0, 0.0}).to(xgrad::kBool);
    const Tensor idx = xgrad::tensor({0.0}).to(xgrad::kInt64);
    const std::vector<std::pair<std::string, std::function<void(Tensor&)>>> writes = {
        {"add_",
         [](Tensor& e) {
             e.add_(xgrad::ones({3, 2}));
         }},
        {"add_", [](Tensor& e) { e.add_(xgrad::ones({2}), 2.0); }},
        {"add_", [](Tensor& e) { e.add_(1.0); }},
        {"sub_",
         [](Tensor& e) {
             e.sub_(xgrad::ones({3, 2}));
         }},
        {"mul_", [](Tensor& e) { e.mul_(2.0); }},
        {"div_",
         [](Tensor& e) {
             e.div_(xgrad::ones({3, 2}));
         }},
        {"copy_",
         [](Tensor& e) {
             e.copy_(xgrad::ones({3, 2}));
         }},
        {"masked_fill_", [mask](Tensor& e) { e.masked_fill_(mask, 5.0); }},
        {"index_put_", [idx](Tensor& e) { e.index_put_({idx}, 5.0); }},
        {"uniform_", [](Tensor& e) { xgrad::uniform_(e); }},
        {"normal_", [](Tensor& e) { xgrad::normal_(e); }},
        {"bernoulli_", [](Tensor& e) { xgrad::bernoulli_(e); }},
    };
    for (const auto& entry : writes) {
        const std::string& op = entry.first;  // not a structured binding: clang 14 cannot capture one
        const auto& write = entry.second;
        CAPTURE(op);
        Tensor base = xgrad::tensor({1.0, 2.0});
        Tensor e = base.expand({3, 2});
        CHECK(golden::invalid_argument_of([&] { write(e); }) == op + ": " + msg + where);
        CHECK(base.to_vector<float>() == std::vector<float>{1.0f, 2.0f});
    }
    // A transposed expanded tensor is refused as well; fill_ and zero_ write one value and are not.
    Tensor t = xgrad::zeros({2, 1}).expand({2, 3}).t();
    CHECK(golden::invalid_argument_of([&] { t.mul_(2.0); }).rfind("mul_: " + msg, 0) == 0);
    Tensor base = xgrad::zeros({1});
    Tensor e = base.expand({3});
    e.fill_(4.0);
    CHECK(base.item<float>() == 4.0f);
    e.zero_();
    CHECK(base.item<float>() == 0.0f);
}

TEST_CASE("an in-place result that does not fit self's dtype throws PyTorch's error") {
    Tensor i = xgrad::zeros({3}, xgrad::kInt64), b = xgrad::zeros({3}, xgrad::kBool);
    CHECK(golden::invalid_argument_of([&] { i.add_(1.5); }) == "add_: " + pytorch_message("cast_float_long"));
    CHECK(golden::invalid_argument_of([&] { i.add_(xgrad::full({3}, 0.5)); }) ==
          "add_: " + pytorch_message("cast_float_long"));
    CHECK(golden::invalid_argument_of([&] { i.sub_(xgrad::full({3}, 0.5)); }) ==
          "sub_: " + pytorch_message("cast_float_long"));
    CHECK(golden::invalid_argument_of([&] { i.mul_(xgrad::full({1}, 2.0)); }) ==
          "mul_: " + pytorch_message("cast_float_long"));
    CHECK(golden::invalid_argument_of([&] { i.div_(2.0); }) == "div_: " + pytorch_message("cast_div_long"));
    CHECK(golden::invalid_argument_of([&] { b.add_(1.0); }) == "add_: " + pytorch_message("cast_long_bool"));
    CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 0, 0});
    CHECK(b.to_vector<bool>() == std::vector<bool>{false, false, false});
    // What fits: integral results into integral tensors, anything into floating ones, bool into bool.
    i.add_(2.0);
    i.mul_(xgrad::full({3}, 3.0, xgrad::kInt32));
    CHECK(i.to_vector<std::int64_t>() == std::vector<std::int64_t>{6, 6, 6});
    Tensor f = xgrad::zeros({3});
    f.add_(xgrad::full({3}, 2.0, xgrad::kInt64));
    f.add_(xgrad::full({3}, 0.5, xgrad::kFloat64));
    CHECK(f.to_vector<float>() == std::vector<float>{2.5f, 2.5f, 2.5f});
    b.add_(xgrad::ones({3}, xgrad::kBool));
    CHECK(b.to_vector<bool>() == std::vector<bool>{true, true, true});
}

TEST_CASE("a range too long for memory is an arange error naming its length") {
    check_error([] { xgrad::arange(1e30); }, "invalid_argument",
                "arange: the range [0, 1e+30) with step 1 has too many elements (1e+30)");
    check_error([] { xgrad::arange(0.0, 1e18, 1e-3); }, "invalid_argument",
                "arange: the range [0, 1e+18) with step 0.001 has too many elements (1e+21)");
    check_error([] { xgrad::arange(0.0, 1e17, 1.0); }, "out_of_memory",
                "arange: out of memory: tried to allocate 355.27 PiB (400000000000000000 bytes) on the CPU");
}

TEST_CASE("editing a saved tensor in place makes backward throw PyTorch's error") {
    const std::string pytorch = pytorch_message("inplace");
    REQUIRE(pytorch.find("is at version 1; expected version 0 instead") != std::string::npos);
    const std::string head =
        "backward: one of the variables needed for gradient computation has been modified by an inplace operation: ";
    check_error(
        [] {
            Tensor w = xgrad::randn({3}).requires_grad_();
            Tensor x = xgrad::randn({3});
            Tensor y = (w * x).sum();
            x.mul_(2.0);  // directly
            y.backward();
        },
        "invalid_argument", head + "[float32 [3]], saved by MulBackward0, is at version 1; expected version 0 instead");
    check_error(
        [] {
            Tensor w = xgrad::randn({2, 3}, xgrad::kFloat64).requires_grad_();
            Tensor y = w.exp();
            Tensor loss = y.sum();
            y.detach().zero_();  // through detach()
            loss.backward();
        },
        "invalid_argument",
        head + "[float64 [2, 3]], saved by ExpBackward0, is at version 1; expected version 0 instead");
    check_error(
        [] {
            nn::Linear fc(3, 2);
            Tensor loss = fc(xgrad::randn({4, 3})).pow(2.0).sum();
            {
                xgrad::NoGradGuard no_grad;  // as an optimizer step between forward and backward
                fc.weight.sub_(xgrad::ones({2, 3}));
                fc.weight.add_(xgrad::ones({2, 3}));
            }
            loss.backward();
        },
        "invalid_argument",
        head + "[float32 [3, 2]], saved by AddmmBackward0, is at version 3; expected version 1 instead");
}

TEST_CASE("mixed dtypes in matmul and linear throw, naming both dtypes") {
    check_error(
        [] {
            xgrad::matmul(xgrad::ones({2, 3}), xgrad::ones({3, 2}, xgrad::kFloat64));
        },
        "invalid_argument",
        "matmul: expected both arguments to have the same dtype, but got torch.float32 and torch.float64 "
        "(shapes (2, 3) and (3, 2))");
    check_error(
        [] {
            nn::Linear fc(3, 2);
            fc(xgrad::ones({4, 3}, xgrad::kFloat64));
        },
        "invalid_argument",
        "linear: expected input and weight to have the same dtype, but got torch.float64 (input) and torch.float32 "
        "(weight)");
}

TEST_CASE("LayerNorm's integer form warns once when it normalises every axis, batch included") {
    const Outcome o = in_child([] {
        nn::LayerNorm ln(3);
        ln(xgrad::randn({2, 4, 3}));
        ln(xgrad::randn({2, 4, 3}));  // once per process
        nn::RMSNorm rms(1);
        rms(xgrad::randn({2, 4, 3}));  // the last axis only: no warning
    });
    CHECK(o.kind == "none");
    CHECK(o.err ==
          "xgrad warning: nn::LayerNorm(3) normalises the last 3 dimensions of its input of shape (2, 4, 3), that is "
          "all of them, the batch included (giagrad's meaning of an integer). For PyTorch's nn.LayerNorm(3), over "
          "the last dimension only, write nn::LayerNorm({3}).\n");
    const Outcome quiet = in_child([] {
        nn::LayerNorm ln({3});
        ln(xgrad::randn({2, 4, 3}));
        nn::LayerNorm ln2(2);
        ln2(xgrad::randn({2, 4, 3}));
    });
    CHECK(quiet.kind == "none");
    CHECK(quiet.err.empty());
}

TEST_CASE("a lazy LayerNorm cannot be saved before its first forward") {
    check_error(
        [] {
            nn::LayerNorm ln(1);
            xgrad::save(ln, "/nonexistent-dir/ln.safetensors");
        },
        "invalid_argument",
        "save: '/nonexistent-dir/ln.safetensors': the module LayerNorm has uninitialized parameters: their shape is "
        "fixed by its first forward. Run a forward first, or give the module its shape when constructing it");
}

TEST_CASE("a lazy module loads the shapes a file gives it, and rejects shapes that cannot fit") {
    check_error(
        [] {
            nn::LayerNorm ln(2);
            ln.load_state_dict({{"weight", xgrad::ones({5})}, {"bias", xgrad::zeros({5})}});
        },
        "invalid_argument",
        "load_state_dict: size mismatch for weight: the file has shape (5,), which cannot be the normalized shape of "
        "LayerNorm(2) (it needs 2 dimensions)");
}
