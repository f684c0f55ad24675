// Does normalisation help a deep MLP train? The same network without normalisation, with LayerNorm
// and with RMSNorm, trained on three interleaved spirals; loss curves to a CSV and a gnuplot plot.
//
//   train_layernorm [--out DIR] [--steps N] [--quick] [--optimizer adam|sgd] [--lr LR] [--init default|he]
//                   [--device cpu|cuda] [--dtype float32|float64]
//   (train_layernorm --help describes them; the command line is parsed with CLI11)
//
// The network is 8 hidden blocks Linear → [norm] → ReLU of width 128 (the first Linear takes the 2
// coordinates), then Linear(128, 3).
// The norm, when there is one, sits between each Linear and its ReLU (pre-activation), over the 128
// features. Every variant starts from the same Linear weights (the seed is reset before each model
// is built, and the norm layers draw no random numbers), sees the same batches, and is trained with
// the same optimizer: Adam with its default learning rate, 1e-3, for 500 steps of 128 points.
// Losses depend only on the seed, so a rerun writes the same CSV; times and steps/s do not.
//
// What we tried, all 500 steps with the seeds used here. Each cell is "steps to 0.2 / final
// held-out loss" (the program's table, defined there); "-" means the smoothed loss never got below
// 0.2. Chance level is ln 3 = 1.0986.
//                                     none          LayerNorm     RMSNorm
//   Adam lr 3e-4                      312 / 0.12     80 / 0.04     82 / 0.02
//   Adam lr 1e-3 (the default)        312 / 0.09     97 / 0.03    100 / 0.02
//   Adam lr 3e-3                      241 / 0.03    301 / 0.03      - / 0.87
//   SGD momentum 0.9, lr 3e-3           - / 1.10    174 / 0.21    152 / 0.07
//   SGD momentum 0.9, lr 1e-2           - / 1.10    266 / 0.08      - / 0.09
//   SGD momentum 0.9, lr 5e-2           - / 1.10      - / 1.10      - / 1.10
//   Adam lr 1e-3, --init he           168 / 0.21    200 / 0.04    202 / 0.005
//   SGD lr 1e-2, --init he            257 / 0.16    175 / 0.41    185 / 0.01
// The defaults are Adam's own settings, not the row that favours normalisation most.
//
// What the table says:
// - With nn::Linear's default initialisation (PyTorch's), a plain 8-layer ReLU network starts
//   with almost no signal from the input. The part of each activation that depends on the input
//   shrinks about √6 times per layer (√(1/3) from the weights, √(1/2) from the ReLU), roughly
//   1000 times over 8 layers, and the biases swamp it. LayerNorm and RMSNorm rescale every layer,
//   so the signal gets through. The normalised networks fall below 0.2 about three times sooner
//   at Adam's default rate and below it. With SGD, the plain network does not leave chance level
//   at all.
// - This is not unconditional. At Adam lr 3e-3, the plain network keeps up and RMSNorm fails. At
//   lr 1e-3, every variant has loss spikes. With He initialisation (`--init he`), the plain
//   network keeps up with the normalised ones under Adam (it even gets below 0.2 first). Only
//   with SGD is it still slower.
#include <xgrad/xgrad.hpp>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

using xgrad::Tensor;
namespace nn = xgrad::nn;
namespace F = xgrad::nn::functional;
namespace optim = xgrad::optim;

namespace {

struct Config {
    std::filesystem::path out_dir = ".";
    int steps = 500;
    int width = 128;
    int depth = 8;  // hidden blocks
    int batch = 128;
    std::string optimizer = "adam";
    double lr = 1e-3;
    std::string init = "default";
    xgrad::Device device = xgrad::kCPU;    // where the models, batches and optimizer states live
    xgrad::DType dtype = xgrad::kFloat32;  // of the parameters and the inputs
};

constexpr int kClasses = 3;
constexpr std::uint64_t kModelSeed = 0;  // initial weights
constexpr std::uint64_t kDataSeed = 1;   // training batches
constexpr std::uint64_t kEvalSeed = 2;   // the held-out set
constexpr std::int64_t kEvalSize = 3000;
constexpr double kSmoothing = 0.95;  // of the loss curves (exponential moving average)
constexpr double kTarget = 0.2;      // "steps to 0.2": when the smoothed loss first gets below it

struct Batch {
    Tensor x;  // (N, 2) float32
    Tensor y;  // (N) int64 class indices
};

// [data]
// N points on three interleaved spiral arms. A point of class c at position t in [0, 1) lies at
// radius t and angle 2πc/3 + 3πt, so each arm makes one and a half turns, plus N(0, 0.2²) noise
// on the angle.
Batch spirals(std::int64_t n, xgrad::Generator& gen) {
    auto t = xgrad::rand({n}, {}, &gen).to_vector<double>();
    auto c = xgrad::randint(kClasses, {n}, xgrad::kInt64, &gen).to_vector<std::int64_t>();
    auto noise = xgrad::randn({n}, {}, &gen).to_vector<double>();
    std::vector<float> xy(2 * n);
    for (std::int64_t i = 0; i < n; ++i) {
        double angle = 2 * std::numbers::pi * c[i] / kClasses + 3 * std::numbers::pi * t[i] + 0.2 * noise[i];
        xy[2 * i] = static_cast<float>(t[i] * std::cos(angle));
        xy[2 * i + 1] = static_cast<float>(t[i] * std::sin(angle));
    }
    return {xgrad::from_vector(xy, {n, 2}), xgrad::from_vector(c, {n}, xgrad::kInt64)};
}
// [data]

// [model]
// `depth` blocks Linear → [norm] → ReLU of `width` features, then Linear(width, 3); `norm` is
// "none", "layernorm" or "rmsnorm". The seed is reset first: every variant gets the same Linears.
nn::Sequential make_mlp(const std::string& norm, const Config& cfg) {
    xgrad::manual_seed(kModelSeed);
    nn::Sequential mlp;
    std::int64_t in = 2, width = cfg.width;
    for (int i = 0; i < cfg.depth; ++i) {
        mlp.push_back(nn::Linear(in, width));
        if (norm == "layernorm") mlp.push_back(nn::LayerNorm({width}));
        if (norm == "rmsnorm") mlp.push_back(nn::RMSNorm({width}));
        mlp.push_back(nn::ReLU());
        in = width;
    }
    mlp.push_back(nn::Linear(in, kClasses));
    if (cfg.init == "he") {  // He (Kaiming) normal weights for ReLU, zero biases
        for (const auto& module : mlp)
            if (auto* linear = dynamic_cast<nn::Linear*>(module.get())) {
                nn::init::kaiming_normal_(linear->weight, 0.0, "fan_in", "relu");
                nn::init::zeros_(linear->bias);
            }
    }
    return mlp;
}
// [model]

std::unique_ptr<optim::Optimizer> make_optimizer(const nn::Module& model, const Config& cfg) {
    if (cfg.optimizer == "sgd")
        return std::make_unique<optim::SGD>(model.parameters(), optim::SGDOptions{.lr = cfg.lr, .momentum = 0.9});
    return std::make_unique<optim::Adam>(model.parameters(), optim::AdamOptions{.lr = cfg.lr});
}

// Shows progress: on a terminal, one line redrawn with '\r' (at most ten times a second); otherwise
// (CI, a pipe), a plain line at every tenth of the run, so that logs stay readable.
class Progress {
public:
    Progress(std::string name, int total)
        : name_(std::move(name)),
          total_(total),
          tty_(isatty(fileno(stdout)) != 0),
          every_(std::max(1, total / 10)),
          start_(std::chrono::steady_clock::now()) {}

    void update(int step, double loss) {
        bool last = step == total_;
        double now = seconds();
        if (!last && (tty_ ? now - shown_ < 0.1 : step % every_ != 0)) return;
        shown_ = now;
        double rate = step / now;
        if (tty_) {
            constexpr int kBar = 30;
            int filled = kBar * step / total_;
            std::printf("\r%-9s [%s%s] %5d/%d  loss %.4f  %6.1f steps/s", name_.c_str(),
                        std::string(filled, '#').c_str(), std::string(kBar - filled, '.').c_str(), step, total_, loss,
                        rate);
            if (last) std::printf("\n");
        } else {
            std::printf("%-9s step %5d/%d  loss %.4f  %6.1f steps/s\n", name_.c_str(), step, total_, loss, rate);
        }
        std::fflush(stdout);
    }

    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

private:
    std::string name_;
    int total_;
    bool tty_;
    int every_;
    std::chrono::steady_clock::time_point start_;
    double shown_ = -1;  // when the line was last shown (seconds)
};

struct Result {
    std::string name;
    std::vector<double> losses;  // the batch loss at each step
    int steps_to_target = -1;    // first step whose smoothed loss is below kTarget; -1 if none
    double eval_loss = 0, accuracy = 0, seconds = 0;
};

// [train]
Result train(const std::string& name, const Config& cfg, const Batch& eval) {
    nn::Sequential model = make_mlp(name, cfg);
    model.to(cfg.device);  // built on the CPU (the seeded initialisation), then moved
    model.to(cfg.dtype);
    auto opt = make_optimizer(model, cfg);
    xgrad::Generator data(kDataSeed);  // the same batches for every variant
    Result r;
    r.name = name;
    Progress progress(name, cfg.steps);
    double smoothed = 0;
    for (int step = 1; step <= cfg.steps; ++step) {
        Batch b = spirals(cfg.batch, data);
        opt->zero_grad();
        Tensor loss = F::cross_entropy(model(b.x.to(cfg.device).to(cfg.dtype)), b.y.to(cfg.device));
        loss.backward();
        opt->step();
        double l = loss.item<double>();
        r.losses.push_back(l);
        smoothed = step == 1 ? l : kSmoothing * smoothed + (1 - kSmoothing) * l;
        if (r.steps_to_target < 0 && smoothed < kTarget) r.steps_to_target = step;
        progress.update(step, l);
    }
    r.seconds = progress.seconds();
    // [train]

    xgrad::NoGradGuard no_grad;
    Tensor logits = model(eval.x.to(cfg.device).to(cfg.dtype));  // (N, 3)
    r.eval_loss = F::cross_entropy(logits, eval.y.to(cfg.device)).item<double>();
    auto scores = logits.to_vector<double>();
    auto labels = eval.y.to_vector<std::int64_t>();
    std::int64_t correct = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) {
        auto row = scores.begin() + static_cast<std::ptrdiff_t>(i * kClasses);
        correct += std::max_element(row, row + kClasses) - row == labels[i];
    }
    r.accuracy = static_cast<double>(correct) / static_cast<double>(labels.size());
    return r;
}

// step,none,layernorm,rmsnorm: the batch loss of each variant at each step. False if writing failed.
bool write_csv(const std::filesystem::path& path, const std::vector<Result>& results) {
    std::ofstream f(path);
    f << "step";
    for (const auto& r : results) f << "," << r.name;
    f << "\n";
    char buf[32];
    for (std::size_t s = 0; s < results.front().losses.size(); ++s) {
        f << s + 1;
        for (const auto& r : results) {
            std::snprintf(buf, sizeof buf, ",%.6f", r.losses[s]);
            f << buf;
        }
        f << "\n";
    }
    f.close();
    return !f.fail();
}

// True when an executable file named `program` is in one of PATH's directories.
bool on_path(const std::string& program) {
    const char* path = std::getenv("PATH");
    if (path == nullptr) return false;
    std::string dirs = path;
    for (std::size_t begin = 0, end; begin <= dirs.size(); begin = end + 1) {
        end = std::min(dirs.find(':', begin), dirs.size());
        if (end == begin) continue;
        auto candidate = std::filesystem::path(dirs.substr(begin, end - begin)) / program;
        std::error_code ec;
        if (std::filesystem::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0) return true;
    }
    return false;
}

// `text` as a gnuplot single-quoted string (a quote inside is written twice).
std::string gnuplot_quote(const std::string& text) {
    std::string q = "'";
    for (char c : text) q += c == '\'' ? std::string("''") : std::string(1, c);
    return q + "'";
}

// Writes DIR/train_layernorm.gp, which plots the CSV: a PNG with gnuplot's pngcairo or png
// terminal, else an SVG. Runs it when gnuplot is on PATH. The script names its files relative to
// DIR, so `cd DIR && gnuplot train_layernorm.gp` redraws the plot. Returns the plot's path, or "".
std::filesystem::path plot(const std::filesystem::path& dir, const Config& cfg) {
    auto script = dir / "train_layernorm.gp";
    {
        std::ofstream f(script);
        f << "# Loss curves written by train_layernorm: thin lines are batch losses, thick ones their\n"
             "# exponential moving average (smoothing "
          << kSmoothing << ").\n"
          << "set datafile separator ','\n"
             "set key autotitle columnhead top right\n"
             "set title 'MLP with "
          << cfg.depth << " hidden layers of " << cfg.width << " on three spirals (" << cfg.optimizer << ", lr "
          << cfg.lr << ", batch " << cfg.batch << (cfg.init == "he" ? ", He init" : "") << ")'\n"
          << R"(set xlabel 'step'
set ylabel 'training loss (cross-entropy)'
set logscale y
set grid
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 800,450 font ',10'
    set output 'train_layernorm.png'
} else { if (strstrt(' '.GPVAL_TERMINALS.' ', ' png ') > 0) {
    set terminal png size 800,450
    set output 'train_layernorm.png'
} else {
    set terminal svg size 800,450
    set output 'train_layernorm.svg'
} }
)"
          << "a = " << kSmoothing << "\n"
          << R"(plot for [c = 2:4] 'train_layernorm.csv' using 1:c with lines lc c - 1 lw 0.5 notitle, \
     for [c = 2:4] 'train_layernorm.csv' using 1:(s = ($0 == 0 ? column(c) : a * s + (1 - a) * column(c))) \
         with lines lc c - 1 lw 2.5 title columnhead(c)
)";
    }
    if (!on_path("gnuplot")) {
        std::printf("gnuplot is not on PATH: only the CSV was written (%s plots it)\n", script.c_str());
        return {};
    }
    std::error_code ec;
    for (const char* name : {"train_layernorm.png", "train_layernorm.svg"}) std::filesystem::remove(dir / name, ec);
    std::fflush(stdout);
    FILE* gp = popen("gnuplot", "w");
    if (gp == nullptr) {
        std::printf("could not start gnuplot: only the CSV was written\n");
        return {};
    }
    std::fprintf(gp, "cd %s\nload 'train_layernorm.gp'\n", gnuplot_quote(dir.string()).c_str());
    int status = pclose(gp);
    for (const char* name : {"train_layernorm.png", "train_layernorm.svg"})
        if (status == 0 && std::filesystem::exists(dir / name, ec)) return dir / name;
    std::printf("gnuplot failed (status %d): only the CSV was written\n", status);
    return {};
}

}  // namespace

int main(int argc, char** argv) {
    Config cfg;
    std::string out_dir = cfg.out_dir.string();
    bool quick = false;
    CLI::App app("Trains an MLP (" + std::to_string(cfg.depth) + " hidden layers of " + std::to_string(cfg.width) +
                     ") on three spirals three times: without normalisation,\n"
                     "with LayerNorm and with RMSNorm. Writes DIR/train_layernorm.csv (the loss of every step)\n"
                     "and, when gnuplot is on PATH, DIR/train_layernorm.png (or .svg).",
                 "train_layernorm");
    // CLI11's PositiveNumber would print the largest double in its message.
    CLI::Validator positive(
        [](std::string& text) {
            char* end = nullptr;
            double value = std::strtod(text.c_str(), &end);
            return end != text.c_str() && *end == '\0' && value > 0 ? std::string()
                                                                    : text + " is not a positive number";
        },
        "POSITIVE");
    app.add_option("--out", out_dir, "Output directory DIR, created if needed")->capture_default_str();
    auto* steps =
        app.add_option("--steps", cfg.steps, "Training steps per variant")->check(positive)->capture_default_str();
    app.add_flag("--quick", quick, "A smoke test: width 32 and 60 steps (unless --steps is given)");
    app.add_option("--optimizer", cfg.optimizer, "adam, or sgd (momentum 0.9)")
        ->check(CLI::IsMember({"adam", "sgd"}))
        ->capture_default_str();
    app.add_option("--lr", cfg.lr, "Learning rate")->check(positive)->capture_default_str();
    app.add_option("--init", cfg.init, "default (nn::Linear's own, as PyTorch) or he (Kaiming normal, zero biases)")
        ->check(CLI::IsMember({"default", "he"}))
        ->capture_default_str();
    std::string device = "cpu";
    app.add_option("--device", device,
                   "cpu, or cuda: the whole training loop on the GPU (needs xgrad built with CUDA and a GPU)")
        ->check(CLI::IsMember({"cpu", "cuda"}))
        ->capture_default_str();
    std::string dtype = "float32";
    app.add_option("--dtype", dtype,
                   "float32, or float64 (the model and its inputs: model.double() in PyTorch; float64 makes runs "
                   "on different devices agree to rounding, which float32 runs with loss spikes do not)")
        ->check(CLI::IsMember({"float32", "float64"}))
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (dtype == "float64") cfg.dtype = xgrad::kFloat64;
    cfg.out_dir = out_dir;
    if (device == "cuda") {
        if (!xgrad::cuda::is_available()) {
            std::fprintf(stderr,
                         "train_layernorm: --device cuda: no CUDA GPU is available (or xgrad was built without its "
                         "CUDA backend)\n");
            return 1;
        }
        cfg.device = xgrad::kCUDA;
    }
    if (quick) {
        cfg.width = 32;
        if (steps->count() == 0) cfg.steps = 60;
    }

    // Before training, so that a bad directory fails at once rather than after a minute.
    std::error_code ec;
    std::filesystem::create_directories(cfg.out_dir, ec);
    if (!std::filesystem::is_directory(cfg.out_dir)) {
        std::fprintf(stderr, "train_layernorm: cannot create the directory %s\n", cfg.out_dir.c_str());
        return 1;
    }

    xgrad::Generator eval_gen(kEvalSeed);
    Batch eval = spirals(kEvalSize, eval_gen);
    std::vector<Result> results;
    for (const char* name : {"none", "layernorm", "rmsnorm"}) results.push_back(train(name, cfg, eval));

    auto csv = cfg.out_dir / "train_layernorm.csv";
    if (!write_csv(csv, results)) {
        std::fprintf(stderr, "train_layernorm: cannot write %s\n", csv.c_str());
        return 1;
    }

    std::printf(
        "\nfinal loss and accuracy: on %lld held-out points; steps to %.1f: when the smoothed training\n"
        "loss first fell below %.1f\n\n",
        static_cast<long long>(kEvalSize), kTarget, kTarget);
    std::printf("%-10s %10s %9s %12s %9s %8s\n", "variant", "final loss", "accuracy", "steps to 0.2", "time (s)",
                "steps/s");
    for (const auto& r : results) {
        std::string reached = r.steps_to_target < 0 ? "-" : std::to_string(r.steps_to_target);
        std::printf("%-10s %10.4f %8.1f%% %12s %9.1f %8.1f\n", r.name.c_str(), r.eval_loss, 100 * r.accuracy,
                    reached.c_str(), r.seconds, cfg.steps / r.seconds);
    }
    std::printf("\nwrote %s\n", csv.c_str());
    if (auto image = plot(cfg.out_dir, cfg); !image.empty()) std::printf("wrote %s (gnuplot)\n", image.c_str());
}
