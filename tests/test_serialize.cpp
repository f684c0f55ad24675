// Tests for serialize.hpp: safetensors files from PyTorch, round trips, atomic saves and hostile files.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "golden.hpp"
#include "xgrad/nn.hpp"
#include "xgrad/serialize.hpp"
#include "xgrad/xgrad.hpp"

namespace fs = std::filesystem;
namespace nn = xgrad::nn;
using xgrad::Tensor;

using golden::invalid_argument_of;

namespace {

/// A fresh directory under /tmp, removed with everything in it at the end of the test.
struct TempDir {
    std::string path;
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "xgrad_serialize_XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path = pattern;
    }
    ~TempDir() { fs::remove_all(path); }
    std::string operator/(const std::string& name) const { return path + "/" + name; }
    std::vector<std::string> entries() const {
        std::vector<std::string> out;
        for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
        return out;
    }
};

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(std::uint64_t n) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>(n >> (8 * i));
    return s;
}

/// A safetensors file from a header and data, the header padded to 8 bytes as the reference does.
std::string craft(std::string header, const std::string& data) {
    header.append((8 - header.size() % 8) % 8, ' ');
    return le64(header.size()) + header + data;
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

/// The model of the golden files: Linear(5, 6), ReLU, Linear(6, 2).
nn::Sequential make_model(std::uint64_t seed) {
    xgrad::manual_seed(seed);
    // Braces, not parentheses: only a braced list is evaluated left to right, so that the layers draw
    // their initial values in PyTorch's order.
    return nn::Sequential{nn::Linear(5, 6), nn::ReLU(), nn::Linear(6, 2)};
}

/// Every byte of every state_dict entry, to check that a module did not change (NaNs included).
std::vector<std::string> snapshot(const nn::Module& m) {
    std::vector<std::string> out;
    for (const auto& [name, t] : m.state_dict()) {
        Tensor c = t.detach().contiguous();
        out.push_back(name + ":" + xgrad::to_string(c.shape()) +
                      std::string(reinterpret_cast<const char*>(c.data_ptr<float>()),
                                  static_cast<std::size_t>(c.numel()) * sizeof(float)));
    }
    return out;
}

void check_equal(const Tensor& a, const Tensor& b, const std::string& what) {
    golden::check_close(a, b, what, 0, 0);
}

}  // namespace

TEST_CASE("a state dict saved from PyTorch loads into the same architecture") {
    nn::Sequential model = make_model(42);  // a different seed, so every value must come from the file
    xgrad::load(model, golden::dir() + "/serialize_sequential.safetensors");
    auto state = model.state_dict();
    REQUIRE(state.size() == 4);
    for (const auto& [name, t] : state) check_equal(t, golden::get("serialize.txt", "sequential." + name), name);
    CHECK(model.parameters()[0].requires_grad());  // loaded in place: still the module's parameters
    xgrad::NoGradGuard no_grad;
    golden::check_close(model(golden::get("serialize.txt", "sequential.input")),
                        golden::get("serialize.txt", "sequential.output"), "forward", 1e-6, 1e-7);
}

TEST_CASE("load_tensors reads F32, F64 and I64, 0-d and empty tensors, and metadata, in header order") {
    xgrad::Metadata metadata{{"stale", "entry"}};
    auto tensors = xgrad::load_tensors(golden::dir() + "/serialize_mixed.safetensors", &metadata);
    CHECK(metadata.empty());  // the file has no __metadata__
    std::vector<std::string> names;
    for (const auto& [name, t] : tensors) {
        names.push_back(name);
        check_equal(t, golden::get("serialize.txt", "mixed." + name), name);
    }
    CHECK(names == std::vector<std::string>{"index", "table", "empty", "naïve.scale", "vector"});
    CHECK(tensors[0].second.to_vector<std::int64_t>()[3] == (std::int64_t{1} << 40) + 1);

    xgrad::load_tensors(golden::dir() + "/serialize_sequential.safetensors", &metadata);
    CHECK(metadata == xgrad::Metadata{{"format", "pt"}});
}

TEST_CASE("bool, uint8 and int32 tensors load from PyTorch's file, save and load back; a bad bool byte is refused") {
    auto tensors = xgrad::load_tensors(golden::dir() + "/serialize_narrow.safetensors");
    std::map<std::string, Tensor> by_name(tensors.begin(), tensors.end());
    REQUIRE(by_name.size() == 3);
    CHECK(by_name["mask"].dtype() == xgrad::kBool);
    CHECK(by_name["mask"].shape() == xgrad::Shape{2, 2});
    CHECK(by_name["mask"].to_vector<bool>() == std::vector<bool>{true, false, false, true});
    CHECK(by_name["bytes"].dtype() == xgrad::kUInt8);
    CHECK(by_name["bytes"].to_vector<int>() == std::vector<int>{0, 7, 255});
    CHECK(by_name["ints"].dtype() == xgrad::kInt32);
    CHECK(by_name["ints"].to_vector<std::int64_t>() == std::vector<std::int64_t>{-5, 2147483647});

    TempDir dir;
    std::string path = dir / "narrow.safetensors";
    xgrad::save_tensors({{"mask", by_name["mask"]}, {"bytes", by_name["bytes"]}, {"ints", by_name["ints"]}}, path);
    for (const auto& entry : xgrad::load_tensors(path)) {
        const std::string& name = entry.first;  // clang 14 cannot capture a structured binding in INFO
        const Tensor& t = entry.second;
        INFO(name);
        CHECK(t.dtype() == by_name[name].dtype());
        CHECK(xgrad::to_string(t) == xgrad::to_string(by_name[name]));
    }
    // A bool byte other than 0 and 1 is a corrupt file, never an undefined C++ bool.
    xgrad::save_tensors({{"flags", by_name["mask"]}}, path);
    std::string bytes = read_bytes(path);
    bytes[bytes.size() - 1] = '\x02';
    write_bytes(path, bytes);
    std::string msg = invalid_argument_of([&] { xgrad::load_tensors(path); });
    CHECK_MESSAGE(contains(msg, "tensor \"flags\" of dtype BOOL holds the byte 2 at element 3"), msg);
}

TEST_CASE("a dtype xgrad does not have is refused, naming the tensor and the dtype") {
    std::string path = golden::dir() + "/serialize_f16.safetensors";
    std::string msg = invalid_argument_of([&] { xgrad::load_tensors(path); });
    CHECK_MESSAGE(contains(msg, path), msg);
    CHECK_MESSAGE(contains(msg, "tensor \"half\" has dtype F16, which xgrad does not support"), msg);
}

TEST_CASE("save writes PyTorch's names in a well-formed header, and the file loads back") {
    TempDir dir;
    std::string path = dir / "model.safetensors";
    nn::Sequential model = make_model(3);
    xgrad::save(model, path);

    std::string bytes = read_bytes(path);
    REQUIRE(bytes.size() >= 8);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
    CHECK(n % 8 == 0);
    REQUIRE(bytes.size() == 8 + n + 200);  // 30 + 6 + 12 + 2 floats
    std::string header = bytes.substr(8, n);
    std::string json = header.substr(0, header.find_last_not_of(' ') + 1);
    CHECK(header.size() - json.size() < 8);
    CHECK(json == R"({"__metadata__":{"format":"pt"},)"
                  R"("0.weight":{"dtype":"F32","shape":[6,5],"data_offsets":[0,120]},)"
                  R"("0.bias":{"dtype":"F32","shape":[6],"data_offsets":[120,144]},)"
                  R"("2.weight":{"dtype":"F32","shape":[2,6],"data_offsets":[144,192]},)"
                  R"("2.bias":{"dtype":"F32","shape":[2],"data_offsets":[192,200]}})");
    std::size_t at = 8 + n;
    for (const auto& entry : model.state_dict()) {  // raw little-endian float32, in header order
        const std::string& name = entry.first;      // not a structured binding: clang 14 cannot capture one
        auto values = entry.second.to_vector<float>();
        INFO(name);
        CHECK(std::memcmp(bytes.data() + at, values.data(), values.size() * sizeof(float)) == 0);
        at += values.size() * sizeof(float);
    }

    nn::Sequential other = make_model(4);
    xgrad::load(other, path);
    CHECK(snapshot(other) == snapshot(model));

    // For gen_serialize.py --check: xgrad's seed-0 model, which should equal torch.manual_seed(0)'s.
    if (const char* keep = std::getenv("XGRAD_SERIALIZE_KEEP")) xgrad::save(make_model(0), keep);
}

TEST_CASE("save_tensors round-trips every dtype, views, odd names and metadata") {
    TempDir dir;
    std::string path = dir / "tensors.safetensors";
    xgrad::manual_seed(5);
    Tensor a = xgrad::randn({3, 4}).requires_grad_().transpose(0, 1);  // not contiguous, in a graph
    Tensor b = xgrad::from_vector<std::int64_t>({-2, -1, 0, 1, std::int64_t{1} << 62}, {5}, xgrad::kInt64);
    Tensor c = xgrad::tensor(2.5, xgrad::kFloat64);
    Tensor d = xgrad::zeros({0, 2});
    Tensor e = xgrad::full({1}, -0.0);
    Tensor f = xgrad::ones({2, 1, 2}, xgrad::kFloat64);
    std::string weird = "w\"eird\\name\n\t\x01";
    xgrad::Metadata metadata{{"format", "pt"}, {"note", "a \"quoted\"\nvalue"}, {"ünïcode", "✓"}};
    xgrad::save_tensors({{"a", a}, {"b", b}, {"c", c}, {"d", d}, {weird, e}, {"ø", f}}, path, metadata);

    xgrad::Metadata read_metadata;
    auto back = xgrad::load_tensors(path, &read_metadata);
    CHECK(read_metadata == metadata);
    REQUIRE(back.size() == 6);
    // Wider elements first, otherwise the given order.
    std::vector<std::pair<std::string, Tensor>> expected{{"b", b}, {"c", c}, {"ø", f}, {"a", a}, {"d", d}, {weird, e}};
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK(back[i].first == expected[i].first);
        check_equal(back[i].second, expected[i].second, expected[i].first);
        CHECK(!back[i].second.requires_grad());
    }
    CHECK(std::signbit(back[5].second.item<float>()));  // the bytes themselves, not just the value
}

TEST_CASE("a header may use escapes, whitespace, null metadata and no tensors") {
    TempDir dir;
    std::string path = dir / "f.safetensors";
    std::string data(8, '\0');
    data[3] = '\x3f', data[2] = '\x80';  // 1.0f, then 0.0f
    write_bytes(path, craft("\n { \"__metadata__\" : null ,\r\n\t\"\\u00e9t\\u00E9\\ud83d\\ude00\\/\" :"
                            " { \"data_offsets\" : [ 0 , 8 ] , \"shape\" : [ 2 ] , \"dtype\" : \"F32\" } } ",
                            data));
    auto t = xgrad::load_tensors(path);
    REQUIRE(t.size() == 1);
    CHECK(t[0].first == "été\xF0\x9F\x98\x80/");
    CHECK(t[0].second.to_vector<float>() == std::vector<float>{1.0f, 0.0f});

    write_bytes(path, craft("{}", ""));
    CHECK(xgrad::load_tensors(path).empty());
}

TEST_CASE("saving is atomic: a failed save leaves the old file and no temporary behind") {
    TempDir dir;
    nn::Sequential model = make_model(6);
    std::string path = dir / "model.safetensors";

    SUBCASE("a missing directory") {
        CHECK_THROWS_AS(xgrad::save(model, dir / "missing/model.safetensors"), std::runtime_error);
        CHECK(dir.entries().empty());
    }
    SUBCASE("an existing file is replaced, with its permissions kept") {
        write_bytes(path, "old contents");
        fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
        xgrad::save(model, path);
        CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
        CHECK(fs::status(path).permissions() ==
              (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
        nn::Sequential other = make_model(7);
        xgrad::load(other, path);
        CHECK(snapshot(other) == snapshot(model));
    }
    SUBCASE("tensors that cannot be saved") {
        write_bytes(path, "old contents");
        Tensor w = xgrad::ones({2});
        for (const nn::NamedTensors& bad :
             {nn::NamedTensors{{"a", w}, {"b", Tensor()}}, nn::NamedTensors{{"a", w}, {"a", w}},
              nn::NamedTensors{{"__metadata__", w}}, nn::NamedTensors{{"bad\xff", w}}}) {
            std::string msg = invalid_argument_of([&] { xgrad::save_tensors(bad, path); });
            CHECK_MESSAGE(contains(msg, "save_tensors: '" + path + "'"), msg);
            CHECK(read_bytes(path) == "old contents");
            CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
        }
    }
    SUBCASE("a write that fails halfway (file size limit)") {
        write_bytes(path, "old contents");
        struct rlimit old_limit {};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
        auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // make write() fail with EFBIG instead
        struct rlimit small = old_limit;
        small.rlim_cur = 100;  // the header alone is longer
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
        std::string msg;
        try {
            xgrad::save(model, path);
            msg = "<no exception>";
        } catch (const std::runtime_error& e) {
            msg = e.what();
        } catch (const std::exception& e) {
            msg = std::string("<wrong exception type> ") + e.what();
        }
        ::setrlimit(RLIMIT_FSIZE, &old_limit);
        std::signal(SIGXFSZ, old_handler);
        CHECK_MESSAGE(contains(msg, "save: '" + path + "': cannot write"), msg);
        CHECK(read_bytes(path) == "old contents");
        CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
    }
}

TEST_CASE("saving over a symbolic link writes the link's target, atomically, and keeps the link") {
    TempDir dir;
    fs::create_directory(dir / "real");
    nn::Sequential model = make_model(6);
    write_bytes(dir / "real/model.safetensors", "old contents");
    fs::create_symlink("real/model.safetensors", dir / "link.safetensors");   // relative, as `ln -s` makes
    fs::create_symlink(dir / "link.safetensors", dir / "link2.safetensors");  // a chain of two
    xgrad::save(model, dir / "link2.safetensors");
    CHECK(fs::is_symlink(dir / "link.safetensors"));
    CHECK(fs::is_symlink(dir / "link2.safetensors"));
    nn::Sequential other = make_model(7);
    xgrad::load(other, dir / "real/model.safetensors");
    CHECK(snapshot(other) == snapshot(model));
    CHECK(dir.entries().size() == 3);  // real/, link, link2: no temporary left in either directory
    CHECK(fs::directory_iterator(dir / "real")->path().filename() == "model.safetensors");
    // A dangling link: its target is created.
    fs::create_symlink("real/new.safetensors", dir / "dangling.safetensors");
    xgrad::save(model, dir / "dangling.safetensors");
    CHECK(fs::is_symlink(dir / "dangling.safetensors"));
    CHECK(fs::is_regular_file(dir / "real/new.safetensors"));
    // A loop is an error naming the path.
    fs::create_symlink(dir / "loop_b", dir / "loop_a");
    fs::create_symlink(dir / "loop_a", dir / "loop_b");
    CHECK_THROWS_WITH_AS(xgrad::save(model, dir / "loop_a"), doctest::Contains("too many levels of symbolic links"),
                         std::runtime_error);
}

TEST_CASE("a save removes the temporaries that killed saves left, but never a live writer's") {
    TempDir dir;
    nn::Sequential model = make_model(6);
    const std::string path = dir / "model.safetensors";
    xgrad::save(model, path);
    // What a process killed between writing and renaming leaves: a temporary nobody holds a lock on.
    write_bytes(path + ".xgrad-tmp.dead01", "partial");
    // A writer still at work: it holds an flock on its temporary (here a child process, as another
    // process saving the same file would).
    const std::string live = path + ".xgrad-tmp.live01";
    write_bytes(live, "in progress");
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t writer = ::fork();
    REQUIRE(writer >= 0);
    if (writer == 0) {
        const int fd = ::open(live.c_str(), O_RDONLY);
        ::flock(fd, LOCK_EX);
        (void)!::write(ready[1], "x", 1);
        ::pause();
        ::_exit(0);
    }
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    // Other files that merely look alike are not temporaries of this target.
    write_bytes(dir / "other.safetensors.xgrad-tmp.abc123", "another target's");
    write_bytes(path + ".xgrad-tmp.toolong1", "not xgrad's name");
    xgrad::save(model, path);
    auto names = dir.entries();
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"model.safetensors", "model.safetensors.xgrad-tmp.live01",
                                            "model.safetensors.xgrad-tmp.toolong1",
                                            "other.safetensors.xgrad-tmp.abc123"});
    ::kill(writer, SIGKILL);  // the writer dies: its lock goes with it, and the next save cleans up
    ::waitpid(writer, nullptr, 0);
    xgrad::save(model, path);
    CHECK(!fs::exists(live));
    ::close(ready[0]);
    ::close(ready[1]);
}

TEST_CASE("kill -9 during save never loses the old file and leaves nothing behind after the next save") {
    TempDir dir;
    const std::string path = dir / "big.safetensors";
    const Tensor big = xgrad::randn({1 << 22});  // 16 MiB: a save takes a while
    xgrad::save_tensors({{"a", xgrad::ones({3})}}, path);
    for (int i = 0; i < 10; ++i) {
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            for (;;) xgrad::save_tensors({{"a", big}}, path);
        }
        ::usleep(static_cast<useconds_t>(5000 + 3000 * i));
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
        const auto loaded = xgrad::load_tensors(path);  // always a whole file, old or new
        REQUIRE(loaded.size() == 1);
        CHECK((loaded[0].second.numel() == 3 || loaded[0].second.numel() == (1 << 22)));
    }
    xgrad::save_tensors({{"a", xgrad::ones({3})}}, path);
    CHECK(dir.entries() == std::vector<std::string>{"big.safetensors"});
}

TEST_CASE("a lazy LayerNorm or RMSNorm takes its shape from the file it loads") {
    TempDir dir;
    nn::Sequential trained(nn::Linear(4, 6), nn::LayerNorm(1), nn::RMSNorm(1));
    trained(xgrad::randn({2, 4}));  // the first forward fixes the norms' shapes: (6,)
    {
        xgrad::NoGradGuard no_grad;
        for (auto& p : trained.parameters()) p.add_(xgrad::randn(p.shape()));
    }
    xgrad::save(trained, dir / "m.safetensors");
    nn::Sequential fresh(nn::Linear(4, 6), nn::LayerNorm(1), nn::RMSNorm(1));
    const std::vector<Tensor> handles = fresh.parameters();  // as an optimizer made before loading holds them
    CHECK(fresh.children()[1]->has_uninitialized_parameters());
    xgrad::load(fresh, dir / "m.safetensors");
    CHECK(!fresh.children()[1]->has_uninitialized_parameters());
    CHECK(snapshot(fresh) == snapshot(trained));
    CHECK(handles[2].shape() == xgrad::Shape{6});  // the optimizer's handle follows
    const Tensor x = xgrad::randn({3, 4});
    CHECK(fresh(x).to_vector<float>() == trained(x).to_vector<float>());
}

TEST_CASE("load checks names, shapes and dtypes against the module and changes nothing on error") {
    TempDir dir;
    std::string path = dir / "model.safetensors";
    nn::Sequential saved = make_model(8);
    xgrad::save(saved, path);

    auto refused = [&](nn::Module& target, const std::string& phrase, bool strict = true) {
        auto before = snapshot(target);
        std::string msg = invalid_argument_of([&] { xgrad::load(target, path, strict); });
        CHECK_MESSAGE(contains(msg, "load: '" + path + "'"), msg);
        CHECK_MESSAGE(contains(msg, phrase), msg);
        CHECK(snapshot(target) == before);
    };
    nn::Sequential wider(nn::Linear(5, 6), nn::ReLU(), nn::Linear(6, 3));
    refused(wider, "size mismatch for 2.weight");
    nn::Sequential shorter(nn::Linear(5, 6));
    refused(shorter, "unexpected key(s): \"2.weight\", \"2.bias\"");
    nn::Sequential longer(nn::Linear(5, 6), nn::ReLU(), nn::Linear(6, 2), nn::ReLU(), nn::Linear(2, 1));
    refused(longer, "missing key(s): \"4.weight\", \"4.bias\"");
    nn::Sequential doubles = make_model(9);
    doubles.to(xgrad::kFloat64);
    auto before = doubles.state_dict()[0].second.to_vector<double>();
    std::string msg = invalid_argument_of([&] { xgrad::load(doubles, path); });
    CHECK_MESSAGE(contains(msg, "dtype mismatch for 0.weight"), msg);
    CHECK(doubles.state_dict()[0].second.to_vector<double>() == before);

    // Not strict: the names both have are loaded, the rest is left alone.
    xgrad::load(shorter, path, /*strict=*/false);
    check_equal(shorter.state_dict()[0].second, saved.state_dict()[0].second, "0.weight");
    check_equal(shorter.state_dict()[1].second, saved.state_dict()[1].second, "0.bias");
}

TEST_CASE("malformed files are refused with a message naming the file and the problem") {
    TempDir dir;
    std::string path = dir / "bad.safetensors";
    const std::string w8 = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    const std::string eight(8, '\0');
    auto tensor = [](const std::string& name, const std::string& dtype, const std::string& shape,
                     const std::string& offsets) {
        return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets +
               "}";
    };
    std::string many_dims = "[1";  // 1025 sizes of 1
    for (int i = 0; i < 1024; ++i) many_dims += ",1";
    many_dims += "]";
    std::string deep = R"({"w":)" + std::string(100, '[') + std::string(100, ']') + "}";
    struct Case {
        const char* what;
        std::string bytes;
        std::string phrase;
    };
    std::vector<Case> cases = {
        {"empty file", "", "the file has 0 bytes, too few for the 8-byte header length"},
        {"short file", std::string("\x08\0\0\0\0", 5), "the file has 5 bytes, too few"},
        {"huge header length", le64(std::uint64_t{1} << 63) + "{}", "exceeds the limit of 100000000 bytes"},
        {"header length over the cap", le64(200'000'000) + "{}", "exceeds the limit"},
        {"header length past the end", le64(1000) + w8,
         "the header length 1000 is larger than the rest of the file (54 bytes)"},
        {"not JSON", craft("not json", ""),
         "the header is not valid JSON: syntax error while parsing value - invalid literal; last read: 'no' (byte 2 of "
         "the header)"},
        {"unterminated object", craft(w8.substr(0, w8.size() - 1), eight),
         "not valid JSON: syntax error while parsing object - unexpected end of input; expected '}' (byte 57 of the "
         "header)"},
        {"trailing text", craft("{} x", ""), "expected end of input (byte 4 of the header)"},
        {"top level array", craft("[1,2]", ""), "the header must be a JSON object, not an array"},
        {"top level null", craft("null", ""), "the header must be a JSON object, not null"},
        {"invalid UTF-8", craft("{\"w\xff\":1}", ""), "ill-formed UTF-8 byte; last read: '\"w\xEF\xBF\xBD'"},
        {"overlong UTF-8", craft("{\"w\xc0\xaf\":1}", ""), "ill-formed UTF-8 byte"},
        {"deep nesting", craft(deep, ""), "tensor \"w\" must be described by an object, not an array"},
        {"control character", craft("{\"w\x01\":1}", ""), "control character U+0001 (SOH) must be escaped"},
        {"bad escape", craft(R"({"w\x":1})", ""), "forbidden character after backslash"},
        {"lone surrogate", craft(R"({"\ud800":1})", ""), "surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF"},
        {"bad number", craft(R"({"w":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})", eight.substr(4)),
         "not valid JSON"},
        {"truncated literal", craft(R"({"__metadata__":nul})", ""),
         "invalid literal; last read: '\"__metadata__\":nul}'"},
        {"duplicate names",
         craft("{" + tensor("w", "F32", "[1]", "[0,4]") + "," + tensor("w", "F32", "[1]", "[4,8]") + "}", eight),
         "the header names tensor \"w\" twice"},
        {"duplicate field",
         craft(R"({"w":{"dtype":"F32","dtype":"F32","shape":[],"data_offsets":[0,4]}})", eight.substr(4)),
         "tensor \"w\" has \"dtype\" twice"},
        {"metadata twice", craft(R"({"__metadata__":{},"__metadata__":{}})", ""),
         "the header has \"__metadata__\" twice"},
        {"metadata key twice", craft(R"({"__metadata__":{"k":"a","k":"b"}})", ""),
         "\"__metadata__\" has the key \"k\" twice"},
        {"missing comma", craft(R"({"__metadata__":{"k":"a" "j":"b"}})", ""),
         "unexpected string literal; expected '}' (byte 28 of the header)"},
        {"trailing comma", craft(R"({"__metadata__":{"k":"a",}})", ""),
         "unexpected '}'; expected string literal (byte 26 of the header)"},
        {"missing colon", craft(R"({"__metadata__" {}})", ""), "unexpected '{'; expected ':'"},
        {"bad \\u escape", craft(R"({"\u12G4":1})", ""), "'\\u' must be followed by 4 hex digits"},
        {"tensor not an object", craft(R"({"w":[1]})", ""),
         "tensor \"w\" must be described by an object, not an array"},
        {"missing dtype", craft(R"({"w":{"shape":[],"data_offsets":[0,4]}})", eight.substr(4)),
         "tensor \"w\" has no \"dtype\""},
        {"missing shape", craft(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", eight.substr(4)), "has no \"shape\""},
        {"missing offsets", craft(R"({"w":{"dtype":"F32","shape":[]}})", eight.substr(4)), "has no \"data_offsets\""},
        {"unknown field", craft(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[0,4],"extra":1}})", eight.substr(4)),
         "tensor \"w\" has an unknown field \"extra\""},
        {"dtype not a string", craft(R"({"w":{"dtype":32,"shape":[2],"data_offsets":[0,8]}})", eight),
         "\"dtype\" must be a string, not a number"},
        {"unknown dtype", craft("{" + tensor("w", "F33", "[2]", "[0,8]") + "}", eight),
         "tensor \"w\" has the unknown dtype \"F33\""},
        {"unsupported dtype", craft("{" + tensor("w", "BF16", "[4]", "[0,8]") + "}", eight),
         "tensor \"w\" has dtype BF16, which xgrad does not support"},
        {"shape not an array", craft("{" + tensor("w", "F32", "2", "[0,8]") + "}", eight),
         "\"shape\" must be an array, not a number"},
        {"negative size", craft("{" + tensor("w", "F32", "[-2]", "[0,8]") + "}", eight),
         "must be a non-negative integer below 2^64, not -2"},
        {"fractional size", craft("{" + tensor("w", "F32", "[2.0]", "[0,8]") + "}", eight), "not 2.0"},
        {"exponent size", craft("{" + tensor("w", "F32", "[2e0]", "[0,8]") + "}", eight), "not 2e0"},
        {"negative zero size", craft("{" + tensor("w", "F32", "[-0]", "[0,0]") + "}", ""), "not -0"},
        {"boolean size", craft("{" + tensor("w", "F32", "[true]", "[0,4]") + "}", eight.substr(4)),
         "a size in \"shape\" must be a non-negative integer, not a boolean"},
        {"number overflow", craft("{" + tensor("w", "F32", "[1e400]", "[0,4]") + "}", eight.substr(4)),
         "not valid JSON: number overflow parsing '1e400'"},
        {"string size", craft("{" + tensor("w", "F32", "[\"2\"]", "[0,8]") + "}", eight),
         "must be a non-negative integer, not a string"},
        {"size past 2^64", craft("{" + tensor("w", "F32", "[18446744073709551616]", "[0,8]") + "}", eight),
         "below 2^64"},
        {"shape too large", craft("{" + tensor("w", "F32", "[4294967296,4294967296]", "[0,8]") + "}", eight),
         "the shape is too large"},
        {"empty but huge shape", craft("{" + tensor("w", "F32", "[0,4294967296,4294967296]", "[0,0]") + "}", ""),
         "the shape is too large"},
        {"offsets not a pair", craft("{" + tensor("w", "F32", "[2]", "[8]") + "}", eight),
         "must be an array of two integers"},
        {"offsets not a pair", craft("{" + tensor("w", "F32", "[2]", "[0,8,8]") + "}", eight),
         "must be an array of two integers"},
        {"too many dimensions", craft("{" + tensor("w", "F32", many_dims, "[0,4]") + "}", eight.substr(4)),
         "more than 1024 dimensions"},
        {"offsets not numbers", craft("{" + tensor("w", "F32", "[2]", "[0,null]") + "}", eight), "not null"},
        {"offsets backwards", craft("{" + tensor("w", "F32", "[0]", "[8,0]") + "}", eight),
         "data_offsets [8, 0] end before they begin"},
        {"offsets do not match the shape", craft("{" + tensor("w", "F32", "[3]", "[0,8]") + "}", eight),
         "data_offsets [0, 8] hold 8 bytes, but shape (3,) of F32 needs 12"},
        {"offsets past the end", craft(w8, eight.substr(4)),
         "data_offsets [0, 8] go past the end of the data (4 bytes); the file may be truncated"},
        {"offsets far past the end",
         craft("{" + tensor("w", "F32", "[2]", "[18446744073709551600,18446744073709551608]") + "}", eight),
         "go past the end of the data"},
        {"overlap",
         craft("{" + tensor("a", "F32", "[2]", "[0,8]") + "," + tensor("b", "F32", "[2]", "[4,12]") + "}",
               eight + "1234"),
         "tensors \"a\" and \"b\" overlap"},
        {"empty tensor inside another",
         craft("{" + tensor("a", "F32", "[2]", "[0,8]") + "," + tensor("z", "F32", "[0]", "[4,4]") + "}", eight),
         "overlap"},
        {"gap",
         craft("{" + tensor("a", "F32", "[2]", "[0,8]") + "," + tensor("b", "F32", "[2]", "[12,20]") + "}",
               eight + eight + "1234"),
         "bytes 8 to 12 of the data belong to no tensor (before tensor \"b\")"},
        {"data left over", craft(w8, eight + "1234"), "the last 4 bytes of the data belong to no tensor"},
        {"metadata not an object", craft(R"({"__metadata__":[1]})", ""),
         "\"__metadata__\" must be an object, not an array"},
        {"metadata value not a string", craft(R"({"__metadata__":{"k":1}})", ""),
         "\"__metadata__\" values must be strings; \"k\" is a number"},
    };
    for (const Case& c : cases) {
        INFO(std::string(c.what));
        write_bytes(path, c.bytes);
        std::string msg = invalid_argument_of([&] { xgrad::load_tensors(path); });
        CHECK_MESSAGE(contains(msg, "load_tensors: '" + path + "': "), msg);
        CHECK_MESSAGE(contains(msg, c.phrase), msg);
        // The module-level load reports the same problem and leaves the module alone.
        nn::Sequential model = make_model(10);
        auto before = snapshot(model);
        msg = invalid_argument_of([&] { xgrad::load(model, path); });
        CHECK_MESSAGE(contains(msg, "load: '" + path + "': "), msg);
        CHECK(snapshot(model) == before);
    }

    // A real file cut short.
    nn::Sequential model = make_model(11);
    xgrad::save(model, path);
    std::string bytes = read_bytes(path);
    write_bytes(path, bytes.substr(0, bytes.size() - 3));
    std::string msg = invalid_argument_of([&] { xgrad::load(model, path); });
    CHECK_MESSAGE(contains(msg, "go past the end of the data (197 bytes); the file may be truncated"), msg);

    // Files that cannot be read at all are I/O errors.
    CHECK_THROWS_AS(xgrad::load_tensors(dir / "missing.safetensors"), std::runtime_error);
    CHECK_THROWS_AS(xgrad::load_tensors(dir.path), std::runtime_error);
}

TEST_CASE("damaged files only ever throw: byte flips, truncations and insertions") {
    TempDir dir;
    std::string path = dir / "fuzz.safetensors";
    xgrad::save(make_model(12), path);
    const std::string model_file = read_bytes(path);
    const std::string mixed_file = read_bytes(golden::dir() + "/serialize_mixed.safetensors");
    const std::string structural = "{}[]\":,0123456789-.eE \\nul";

    std::mt19937 rng(20240601);
    auto below = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
    // One to three edits, mostly in the length and the header, where the parser is.
    auto damage = [&](std::string bytes) {
        std::size_t header_end = 8 + static_cast<unsigned char>(bytes[0]) + 256u * static_cast<unsigned char>(bytes[1]);
        for (std::size_t k = 0, edits = 1 + below(3); k < edits && !bytes.empty(); ++k) {
            std::size_t at = below(4) ? below(std::min(bytes.size(), header_end)) : below(bytes.size());
            switch (below(5)) {
                case 0:
                    bytes[at] = static_cast<char>(bytes[at] ^ (1 << below(8)));
                    break;
                case 1:
                    bytes[at] = static_cast<char>(below(256));
                    break;
                case 2:
                    bytes[at] = structural[below(structural.size())];
                    break;
                case 3:
                    bytes.resize(at);
                    break;
                case 4:
                    bytes.insert(at, 1, structural[below(structural.size())]);
                    break;
            }
        }
        return bytes;
    };

    int refused = 0, loaded = 0;
    nn::Sequential model = make_model(13);
    for (int iteration = 0; iteration < 400; ++iteration) {
        write_bytes(path, damage(model_file));
        auto before = snapshot(model);
        try {
            xgrad::load(model, path);
            ++loaded;
        } catch (const std::invalid_argument&) {
            ++refused;
            REQUIRE(snapshot(model) == before);
        } catch (const std::runtime_error&) {
            ++refused;
            REQUIRE(snapshot(model) == before);
        }
    }
    MESSAGE("fuzz (module): " << refused << " refused, " << loaded << " loaded");
    CHECK(refused > 300);
    CHECK(loaded > 0);  // flips in the data still make a valid file

    refused = loaded = 0;
    for (int iteration = 0; iteration < 300; ++iteration) {
        write_bytes(path, damage(mixed_file));
        try {
            xgrad::load_tensors(path);
            ++loaded;
        } catch (const std::invalid_argument&) {
            ++refused;
        } catch (const std::runtime_error&) {
            ++refused;
        }
    }
    MESSAGE("fuzz (tensors): " << refused << " refused, " << loaded << " loaded");
    CHECK(refused > 200);
}

// ---- .npy ---------------------------------------------------------------------------------------

namespace {

/// A .npy file from a header dict and data: magic, version, length (2 bytes in 1.0, 4 after), header.
std::string craft_npy(const std::string& dict, const std::string& data, int major = 1, int minor = 0) {
    std::string header = dict + "\n";
    std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + static_cast<char>(minor);
    for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    return out + header + data;
}

/// The golden arrays of gen_npy.py, built in xgrad from the same formulas.
Tensor npy_f4_c() {
    return (xgrad::arange(6.0) * 0.5 - 1.25).reshape({2, 3});
}
Tensor npy_f8_fortran() {
    return xgrad::arange(12.0, xgrad::kFloat64).reshape({3, 4}) / 8;
}
Tensor npy_i8() {
    return xgrad::from_vector<std::int64_t>({-(std::int64_t{1} << 62), -1, 0, 1, (std::int64_t{1} << 40) + 1}, {5},
                                            xgrad::kInt64);
}

}  // namespace

TEST_CASE("load_npy reads NumPy's files: C and Fortran order, three dtypes, both byte orders, format 2.0") {
    auto load = [](const std::string& name) { return xgrad::load_npy(golden::dir() + "/" + name); };
    struct Case {
        const char* file;
        Tensor expected;
    };
    std::vector<Case> cases = {
        {"npy_f4_c.npy", npy_f4_c()},
        {"npy_f8_fortran.npy", npy_f8_fortran()},
        {"npy_i8.npy", npy_i8()},
        {"npy_f8_scalar.npy", xgrad::tensor(3.5, xgrad::kFloat64)},
        {"npy_f4_empty.npy", xgrad::zeros({0, 3})},
        {"npy_f8_big_endian.npy", xgrad::arange(4.0, xgrad::kFloat64).reshape({2, 2}) - 1.5},
        {"npy_f4_v2.npy", xgrad::arange(8.0).reshape({2, 2, 2}) / 4},
        {"npy_i8_fortran_3d.npy", xgrad::arange(24.0, xgrad::kInt64).reshape({2, 3, 4})},
        {"npy_i4.npy", xgrad::tensor({-1.0, 0.0, 1.0}, xgrad::kInt32)},
        {"npy_u1.npy", xgrad::tensor({0.0, 1.0, 200.0, 255.0}, xgrad::kUInt8)},
        {"npy_b1.npy", xgrad::tensor({{1.0, 0.0, 1.0}, {0.0, 0.0, 1.0}}, xgrad::kBool)},
    };
    for (const Case& c : cases) {
        INFO(c.file);
        Tensor t = load(c.file);
        CHECK(t.dtype() == c.expected.dtype());
        CHECK(t.shape() == c.expected.shape());
        CHECK(t.is_contiguous());
        CHECK(t.device() == xgrad::kCPU);
        check_equal(t, c.expected, c.file);
    }
}

TEST_CASE("save_npy writes what NumPy writes, byte for byte, and load_npy reads it back") {
    TempDir dir;
    struct Case {
        const char* golden;
        Tensor tensor;
        bool fortran;
    };
    std::vector<Case> cases = {
        {"npy_f4_c.npy", npy_f4_c(), false},
        {"npy_f8_fortran.npy", npy_f8_fortran(), true},
        {"npy_i8.npy", npy_i8(), false},
        {"npy_f8_scalar.npy", xgrad::tensor(3.5, xgrad::kFloat64), false},
        {"npy_f4_empty.npy", xgrad::zeros({0, 3}), false},
        {"npy_i4.npy", xgrad::tensor({-1.0, 0.0, 1.0}, xgrad::kInt32), false},
        {"npy_u1.npy", xgrad::tensor({0.0, 1.0, 200.0, 255.0}, xgrad::kUInt8), false},
        {"npy_b1.npy", xgrad::tensor({{1.0, 0.0, 1.0}, {0.0, 0.0, 1.0}}, xgrad::kBool), false},
    };
    for (const Case& c : cases) {
        INFO(c.golden);
        std::string path = dir / c.golden;
        xgrad::save_npy(c.tensor, path, c.fortran);
        CHECK(read_bytes(path) == read_bytes(golden::dir() + "/" + c.golden));
        check_equal(xgrad::load_npy(path), c.tensor, c.golden);
    }

    // A view in a graph, in both orders; a 3-d Fortran round trip.
    xgrad::manual_seed(1);
    Tensor view = xgrad::randn({3, 4}, xgrad::kFloat64).requires_grad_().transpose(0, 1).slice(0, 1, 4);
    for (bool fortran : {false, true}) {
        xgrad::save_npy(view, dir / "view.npy", fortran);
        Tensor back = xgrad::load_npy(dir / "view.npy");
        CHECK(!back.requires_grad());
        check_equal(back, view.detach(), fortran ? "view, Fortran order" : "view, C order");
    }
    Tensor cube = xgrad::arange(60.0).reshape({3, 4, 5});
    xgrad::save_npy(cube, dir / "cube.npy", true);
    check_equal(xgrad::load_npy(dir / "cube.npy"), cube, "3-d, Fortran order");
    CHECK(dir.entries().size() == 10);  // no temporaries left behind

    std::string msg = invalid_argument_of([&] { xgrad::save_npy(Tensor(), dir / "undefined.npy"); });
    CHECK_MESSAGE(contains(msg, "save_npy: '" + (dir / "undefined.npy") + "': the tensor is undefined"), msg);
}

TEST_CASE("load_npy refuses dtypes xgrad does not have, naming the dtype") {
    std::string path = golden::dir() + "/npy_f2.npy";
    std::string msg = invalid_argument_of([&] { xgrad::load_npy(path); });
    CHECK_MESSAGE(contains(msg, "load_npy: '" + path + "': dtype \"<f2\" is not one xgrad reads"), msg);
    CHECK_MESSAGE(contains(msg, "a.astype(numpy.float32)"), msg);
    path = golden::dir() + "/npy_structured.npy";
    msg = invalid_argument_of([&] { xgrad::load_npy(path); });
    CHECK_MESSAGE(contains(msg, "load_npy: '" + path + "': 'descr' is a structured dtype"), msg);
}

TEST_CASE("load_npy accepts the dict literal in other spellings Python writes") {
    TempDir dir;
    std::string path = dir / "a.npy";
    std::string data(8, '\0');
    data[2] = '\x80', data[3] = '\x3f', data[7] = '\x40';  // 1.0f, 2.0f
    for (const std::string& dict :
         {std::string(R"({"shape": (2L,), "fortran_order": False, "descr": "<f4"})"),
          std::string("{ 'descr' : '=f4' ,\n\t'fortran_order' : True , 'shape' : ( 2 , ) , }"),
          std::string("{'descr': 'f4', 'fortran_order': False, 'shape': (2,),}")}) {
        INFO(dict);
        write_bytes(path, craft_npy(dict, data));
        CHECK(xgrad::load_npy(path).to_vector<float>() == std::vector<float>{1.0f, 2.0f});
    }
}

TEST_CASE("malformed .npy files are refused with a message naming the file and the problem") {
    TempDir dir;
    std::string path = dir / "bad.npy";
    const std::string f4 = "'descr': '<f4', 'fortran_order': False, ";
    const std::string eight(8, '\0');
    std::string many_dims = "(1";
    for (int i = 0; i < 1024; ++i) many_dims += ", 1";
    many_dims += ")";
    struct Case {
        const char* what;
        std::string bytes;
        std::string phrase;
    };
    std::vector<Case> cases = {
        {"empty file", "", "the file has 0 bytes, too few for a .npy header"},
        {"not .npy", "PK\x03\x04 a zip file", "the file does not start with \\x93NUMPY (is it a .npy file?)"},
        {"version 4.0", craft_npy("{" + f4 + "'shape': (2,)}", eight, 4), "format version 4.0 is not one xgrad reads"},
        {"version 1.1", craft_npy("{" + f4 + "'shape': (2,)}", eight, 1, 1), "format version 1.1"},
        {"short 2.0 prefix", std::string("\x93NUMPY\x02\x00\x10\x00", 10), "too few for a .npy header"},
        {"header past the end", std::string("\x93NUMPY\x01\x00\x00\x01{}", 12),
         "the header length 256 is larger than the rest of the file (2 bytes)"},
        {"header over the limit", std::string("\x93NUMPY\x02\x00\x20\x4e\x00\x00", 12) + std::string(20000, ' '),
         "the header length 20000 exceeds the limit of 10000 bytes"},
        {"not a dict", craft_npy("[1, 2]", ""), "the header is not a Python dict literal: expected '{' (byte 0"},
        {"unknown key", craft_npy("{" + f4 + "'shape': (2,), 'extra': 1}", eight),
         "unknown key \"extra\" (a .npy header has 'descr', 'fortran_order' and 'shape')"},
        {"key twice", craft_npy("{" + f4 + "'descr': '<f4', 'shape': (2,)}", eight), "the key 'descr' appears twice"},
        {"no descr", craft_npy("{'fortran_order': False, 'shape': (2,)}", eight), "the header has no 'descr'"},
        {"no order", craft_npy("{'descr': '<f4', 'shape': (2,)}", eight), "the header has no 'fortran_order'"},
        {"no shape", craft_npy("{" + f4 + "}", eight), "the header has no 'shape'"},
        {"key not a string", craft_npy("{descr: '<f4'}", eight), "expected a key"},
        {"missing colon", craft_npy("{'descr' '<f4'}", eight), "expected ':'"},
        {"missing comma", craft_npy("{'descr': '<f4' 'shape': (2,)}", eight), "expected '}'"},
        {"quote missing", craft_npy("{'descr: '<f4'}", eight), "unknown key \"descr: \""},
        {"unterminated descr", craft_npy("{'descr': '<f4}", eight), "unterminated string"},
        {"escape", craft_npy("{'descr': '<f\\x34'}", eight), "escapes in strings are not supported"},
        {"text after", craft_npy("{" + f4 + "'shape': (2,)} x", eight), "unexpected text after the dict"},
        {"order not a bool", craft_npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", eight),
         "'fortran_order' must be True or False"},
        {"shape a list", craft_npy("{" + f4 + "'shape': [2]}", eight), "'shape' must be a tuple of integers"},
        {"shape a number", craft_npy("{" + f4 + "'shape': (2)}", eight), "(n) is a number, (n,) a tuple"},
        {"negative size", craft_npy("{" + f4 + "'shape': (-2,)}", eight), "must be non-negative integers"},
        {"fractional size", craft_npy("{" + f4 + "'shape': (2.0,)}", eight), "expected ')'"},
        {"size past 2^64", craft_npy("{" + f4 + "'shape': (18446744073709551616,)}", eight), "is 2^64 or more"},
        {"shape too large", craft_npy("{" + f4 + "'shape': (4294967296, 4294967296)}", eight),
         "the shape is too large"},
        {"empty but huge", craft_npy("{" + f4 + "'shape': (0, 4294967296, 4294967296)}", ""), "the shape is too large"},
        {"too many dimensions", craft_npy("{" + f4 + "'shape': " + many_dims + "}", eight.substr(4)),
         "more than 1024 dimensions"},
        {"float16", craft_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (4,)}", eight),
         "dtype \"<f2\" is not one xgrad reads"},
        {"descr not a string", craft_npy("{'descr': 4, 'fortran_order': False, 'shape': (2,)}", eight),
         "expected a dtype string for 'descr'"},
        {"truncated", craft_npy("{" + f4 + "'shape': (3,)}", eight),
         "shape (3,) of <f4 needs 12 bytes of data, but the file has 8; it may be truncated"},
        {"data left over", craft_npy("{" + f4 + "'shape': (1,)}", eight),
         "shape (1,) of <f4 needs 4 bytes of data, but the file has 8 (one array per file)"},
    };
    for (const Case& c : cases) {
        INFO(std::string(c.what));
        write_bytes(path, c.bytes);
        std::string msg = invalid_argument_of([&] { xgrad::load_npy(path); });
        CHECK_MESSAGE(contains(msg, "load_npy: '" + path + "': "), msg);
        CHECK_MESSAGE(contains(msg, c.phrase), msg);
    }
    CHECK_THROWS_AS(xgrad::load_npy(dir / "missing.npy"), std::runtime_error);
    CHECK_THROWS_AS(xgrad::load_npy(dir.path), std::runtime_error);
}

TEST_CASE("damaged .npy files only ever throw") {
    TempDir dir;
    std::string path = dir / "fuzz.npy";
    const std::string good = read_bytes(golden::dir() + "/npy_f8_fortran.npy");
    const std::string structural = "{}()[]':,0123456789-LTrueFalse \n";
    std::mt19937 rng(20240602);
    auto below = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
    int refused = 0, loaded = 0;
    for (int iteration = 0; iteration < 400; ++iteration) {
        std::string bytes = good;
        for (std::size_t k = 0, edits = 1 + below(3); k < edits && !bytes.empty(); ++k) {
            std::size_t at = below(4) ? below(std::min<std::size_t>(bytes.size(), 128)) : below(bytes.size());
            switch (below(4)) {
                case 0:
                    bytes[at] = static_cast<char>(bytes[at] ^ (1 << below(8)));
                    break;
                case 1:
                    bytes[at] = structural[below(structural.size())];
                    break;
                case 2:
                    bytes.resize(at);
                    break;
                case 3:
                    bytes.insert(at, 1, structural[below(structural.size())]);
                    break;
            }
        }
        write_bytes(path, bytes);
        try {
            xgrad::load_npy(path);
            ++loaded;
        } catch (const std::invalid_argument&) {
            ++refused;
        } catch (const std::runtime_error&) {
            ++refused;
        }
    }
    MESSAGE("fuzz (.npy): " << refused << " refused, " << loaded << " loaded");
    CHECK(refused > 250);
    CHECK(loaded > 0);
}
