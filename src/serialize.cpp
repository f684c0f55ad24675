// safetensors files (the header written and read with nlohmann::json, as a strict and bounded event
// stream) and NumPy .npy files: atomic saves, and loads that validate the whole file before use.
#include "xgrad/serialize.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "xgrad/factory.hpp"

#include <nlohmann/json.hpp>

namespace xgrad {
namespace {

// The reference implementation refuses headers above 100 MB; so do we, before allocating anything.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

// ---- errors -------------------------------------------------------------------------------------

/// A malformed file or an argument that cannot be saved: std::invalid_argument naming op and file.
[[noreturn]] void bad(const char* op, const std::string& path, const std::string& what) {
    throw std::invalid_argument(std::string(op) + ": '" + path + "': " + what);
}

/// An operating-system failure: std::runtime_error with the system's reason.
[[noreturn]] void io_error(const char* op, const std::string& path, const std::string& what, int err) {
    throw std::runtime_error(std::string(op) + ": '" + path + "': " + what + ": " + std::strerror(err));
}

// ---- JSON ---------------------------------------------------------------------------------------
//
// nlohmann::json reads and writes the header. The reader uses its SAX interface: values go straight
// into Entries as they arrive, with no document tree in between, so memory stays a small multiple of
// the header's size however hostile the file, and a value nested deeper than the schema allows is
// refused at its first bracket.

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;  // keeps insertion order: the header lists tensors as saved

/// `s` with every byte that breaks UTF-8 replaced by U+FFFD, so that messages stay printable.
std::string printable(const std::string& s) {
    return Json::parse(Json(s).dump(-1, ' ', false, Json::error_handler_t::replace)).get<std::string>();
}

/// A name from a file, quoted and escaped for an error message, and cut short if it is very long.
std::string quoted(const std::string& name) {
    constexpr std::size_t kMaxShown = 100;
    std::string out = Json(name.substr(0, kMaxShown)).dump(-1, ' ', false, Json::error_handler_t::replace);
    if (name.size() > kMaxShown) out.insert(out.size() - 1, "...");
    return out;
}
/// The same for a non-const string. Argument-dependent lookup also finds std::quoted (<iomanip>, which
/// nlohmann::json includes); these two overloads, as exact matches that are not templates, win.
std::string quoted(std::string& name) {
    return quoted(static_cast<const std::string&>(name));
}

/// True when `s` is valid UTF-8, as every JSON string must be.
bool is_utf8(const std::string& s) {
    try {
        (void)Json(s).dump();
        return true;
    } catch (const Json::type_error&) {
        return false;
    }
}

// ---- the safetensors header ---------------------------------------------------------------------

// More dimensions than any real tensor has; the bound keeps a hostile shape list from costing memory.
constexpr std::size_t kMaxDims = 1024;

/// Every dtype, for the readers' reverse lookups of the format codes below.
constexpr DType kAllDTypes[] = {kFloat32, kFloat64, kInt64, kBool, kInt32, kUInt8};

const char* dtype_code(DType dtype) {
    switch (dtype) {
        case kFloat32:
            return "F32";
        case kFloat64:
            return "F64";
        case kInt64:
            return "I64";
        case kBool:
            return "BOOL";
        case kInt32:
            return "I32";
        case kUInt8:
            return "U8";
    }
    return "?";
}

/// One tensor as the header describes it, checked against the data section.
struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    std::uint64_t begin, end;  // byte offsets into the data section
};

/// Reads the header and checks it against the spec and the `data_bytes` that follow it.
///
/// The public member functions from null() on are nlohmann::json's SAX events; each is checked
/// against where it stands in the schema `{"__metadata__": {str: str}, name: {"dtype": str, "shape":
/// [uint], "data_offsets": [uint, uint]}}`, and the first that does not fit throws.
class HeaderReader {
public:
    HeaderReader(const char* op, const std::string& path, std::uint64_t data_bytes)
        : op_(op), path_(path), data_bytes_(data_bytes) {}

    std::vector<Entry> read(const std::string& header, Metadata& metadata) {
        metadata_ = &metadata;
        Json::sax_parse(header.begin(), header.end(), this);  // strict: only whitespace may follow
        check_unique(entries_);
        check_layout(entries_);
        return std::move(entries_);
    }

    bool null() {
        if (at_ == At::kHeader && key_ == "__metadata__") return true;  // as the reference implementation
        unexpected("null");
    }
    bool boolean(bool) { unexpected("a boolean"); }
    bool number_integer(Json::number_integer_t value) {  // JSON integers with a minus sign
        return not_an_index(value == 0 ? "-0" : std::to_string(value));
    }
    bool number_float(Json::number_float_t, const Json::string_t& text) { return not_an_index(text); }
    bool number_unsigned(Json::number_unsigned_t value) {
        if (at_ == At::kShape) {
            if (dims_.size() == kMaxDims)
                fail(tensor(name_) + ": the shape has more than " + std::to_string(kMaxDims) + " dimensions");
            dims_.push_back(value);
            return true;
        }
        if (at_ == At::kOffsets) {
            if (offsets_.size() == 2)
                fail(tensor(name_) + ": \"data_offsets\" must be an array of two integers [begin, end]");
            offsets_.push_back(value);
            return true;
        }
        unexpected("a number");
    }
    bool string(Json::string_t& value) {
        if (at_ == At::kMetadata) {
            if (!metadata_->emplace(key_, std::move(value)).second)
                fail("\"__metadata__\" has the key " + quoted(key_) + " twice");
            return true;
        }
        if (at_ == At::kEntry && field_ == "dtype") {
            code_ = std::move(value);
            return true;
        }
        unexpected("a string");
    }
    bool binary(Json::binary_t&) { unexpected("binary data"); }  // never in JSON text
    bool start_object(std::size_t) {
        if (at_ == At::kTop) {
            at_ = At::kHeader;
        } else if (at_ == At::kHeader && key_ == "__metadata__") {
            at_ = At::kMetadata;
        } else if (at_ == At::kHeader) {
            at_ = At::kEntry;
            name_ = key_;
            has_dtype_ = has_shape_ = has_offsets_ = false;
            code_.clear(), dims_.clear(), offsets_.clear();
        } else {
            unexpected("an object");
        }
        return true;
    }
    bool key(Json::string_t& key) {
        if (at_ == At::kEntry) {
            bool* seen = key == "dtype"          ? &has_dtype_
                         : key == "shape"        ? &has_shape_
                         : key == "data_offsets" ? &has_offsets_
                                                 : nullptr;
            if (!seen) fail(tensor(name_) + " has an unknown field " + quoted(key));
            if (*seen) fail(tensor(name_) + " has " + quoted(key) + " twice");
            *seen = true;
            field_ = std::move(key);
            return true;
        }
        if (at_ == At::kHeader && key == "__metadata__") {
            if (seen_metadata_) fail("the header has \"__metadata__\" twice");
            seen_metadata_ = true;
        }
        key_ = std::move(key);
        return true;
    }
    bool end_object() {
        if (at_ == At::kEntry) entries_.push_back(finish_entry());
        at_ = at_ == At::kHeader ? At::kDone : At::kHeader;
        return true;
    }
    bool start_array(std::size_t) {
        if (at_ != At::kEntry || field_ == "dtype") unexpected("an array");
        at_ = field_ == "shape" ? At::kShape : At::kOffsets;
        return true;
    }
    bool end_array() {
        if (at_ == At::kOffsets && offsets_.size() != 2)
            fail(tensor(name_) + ": \"data_offsets\" must be an array of two integers [begin, end]");
        at_ = At::kEntry;
        return true;
    }
    bool parse_error(std::size_t position, const std::string&, const Json::exception& e) {
        // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: <reason>".
        std::string reason = e.what();
        if (auto id_end = reason.find("] "); id_end != std::string::npos) reason.erase(0, id_end + 2);
        if (reason.rfind("parse error at line ", 0) == 0)
            if (auto colon = reason.find(": "); colon != std::string::npos) reason.erase(0, colon + 2);
        fail("the header is not valid JSON: " + printable(reason) + " (byte " + std::to_string(position) +
             " of the header)");
    }

private:
    /// Where the parser stands: before the top-level value, in it, in "__metadata__", in a tensor's
    /// object, in its "shape" or "data_offsets" array, or after the top-level value.
    enum class At { kTop, kHeader, kMetadata, kEntry, kShape, kOffsets, kDone };

    [[noreturn]] void fail(const std::string& what) const { bad(op_, path_, what); }

    static std::string tensor(const std::string& name) { return "tensor " + quoted(name); }

    /// A value of `kind` where the schema has no place for it.
    [[noreturn]] void unexpected(const std::string& kind) const {
        switch (at_) {
            case At::kTop:
            case At::kDone:
                fail("the header must be a JSON object, not " + kind);
            case At::kHeader:
                if (key_ != "__metadata__") fail(tensor(key_) + " must be described by an object, not " + kind);
                fail("\"__metadata__\" must be an object, not " + kind);
            case At::kMetadata:
                fail("\"__metadata__\" values must be strings; " + quoted(key_) + " is " + kind);
            case At::kEntry:
                fail(tensor(name_) + ": \"" + field_ + "\" must be " + (field_ == "dtype" ? "a string" : "an array") +
                     ", not " + kind);
            case At::kShape:
            case At::kOffsets:
                fail(index_name() + " must be a non-negative integer, not " + kind);
        }
        fail("unexpected " + kind);
    }

    /// A number with a sign, a fraction or an exponent, or one past 2^64, where a size or offset must be.
    bool not_an_index(const std::string& text) const {
        if (at_ != At::kShape && at_ != At::kOffsets) unexpected("a number");
        fail(index_name() + " must be a non-negative integer below 2^64, not " + text);
    }

    std::string index_name() const {
        return tensor(name_) + (at_ == At::kShape ? ": a size in \"shape\"" : ": \"data_offsets\"");
    }

    /// The tensor whose object just closed, checked on its own and against the data section.
    Entry finish_entry() const {
        std::string tensor = HeaderReader::tensor(name_);
        if (!has_dtype_) fail(tensor + " has no \"dtype\"");
        if (!has_shape_) fail(tensor + " has no \"shape\"");
        if (!has_offsets_) fail(tensor + " has no \"data_offsets\"");

        Entry e{name_, kFloat32, Shape(), offsets_[0], offsets_[1]};
        const DType* known =
            std::find_if(std::begin(kAllDTypes), std::end(kAllDTypes), [&](DType d) { return code_ == dtype_code(d); });
        if (known != std::end(kAllDTypes))
            e.dtype = *known;
        else if (is_known_dtype(code_))
            fail(tensor + " has dtype " + code_ +
                 ", which xgrad does not support (only F32, F64, I64, I32, U8 and BOOL); "
                 "convert it before saving, e.g. with tensor.float() in PyTorch");
        else
            fail(tensor + " has the unknown dtype " + quoted(code_));

        // Every stride must fit in int64, so the product of the sizes (zeros counted as 1) must too.
        std::uint64_t extent = 1, numel = 1;
        for (std::uint64_t size : dims_) {
            if (__builtin_mul_overflow(extent, std::max<std::uint64_t>(size, 1), &extent) ||
                extent > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                fail(tensor + ": the shape is too large");
            numel *= size;
            e.shape.push_back(static_cast<std::int64_t>(size));
        }
        std::uint64_t bytes = 0;
        if (__builtin_mul_overflow(numel, element_size(e.dtype), &bytes)) fail(tensor + ": the shape is too large");

        std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
        if (e.end < e.begin) fail(tensor + ": data_offsets " + range + " end before they begin");
        if (e.end - e.begin != bytes)
            fail(tensor + ": data_offsets " + range + " hold " + std::to_string(e.end - e.begin) +
                 " bytes, but shape " + to_string(e.shape) + " of " + code_ + " needs " + std::to_string(bytes));
        if (e.end > data_bytes_)
            fail(tensor + ": data_offsets " + range + " go past the end of the data (" + std::to_string(data_bytes_) +
                 " bytes); the file may be truncated");
        return e;
    }

    static bool is_known_dtype(const std::string& code) {
        static const std::set<std::string> others = {"I8",  "I16",     "U16",     "F16",     "BF16",
                                                     "U32", "U64",     "F8_E5M2", "F8_E4M3", "F8_E8M0",
                                                     "F4",  "F6_E2M3", "F6_E3M2", "C64"};
        return others.count(code) > 0;
    }

    void check_unique(const std::vector<Entry>& entries) const {
        std::vector<const std::string*> names;
        for (const auto& e : entries) names.push_back(&e.name);
        std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
        auto twice = std::adjacent_find(names.begin(), names.end(),
                                        [](const std::string* a, const std::string* b) { return *a == *b; });
        if (twice != names.end()) fail("the header names tensor " + quoted(**twice) + " twice");
    }

    /// The tensors must tile the data section exactly: no overlaps, no gaps, nothing left over.
    void check_layout(const std::vector<Entry>& entries) const {
        std::vector<const Entry*> by_offset;
        for (const auto& e : entries) by_offset.push_back(&e);
        std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
            return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
        });
        std::uint64_t cursor = 0;
        const Entry* previous = nullptr;
        for (const Entry* e : by_offset) {
            if (e->begin < cursor)
                fail("tensors " + quoted(previous->name) + " and " + quoted(e->name) + " overlap (bytes " +
                     std::to_string(e->begin) + " to " + std::to_string(cursor) + " of the data)");
            if (e->begin > cursor)
                fail("bytes " + std::to_string(cursor) + " to " + std::to_string(e->begin) +
                     " of the data belong to no tensor (before tensor " + quoted(e->name) + ")");
            cursor = e->end;
            previous = e;
        }
        if (cursor != data_bytes_)
            fail("the last " + std::to_string(data_bytes_ - cursor) +
                 " bytes of the data belong to no tensor (the tensors end at byte " + std::to_string(cursor) + " of " +
                 std::to_string(data_bytes_) + ")");
    }

    const char* op_;
    const std::string& path_;
    std::uint64_t data_bytes_;
    Metadata* metadata_ = nullptr;
    std::vector<Entry> entries_;
    At at_ = At::kTop;
    std::string key_;  // the key being read in the header or in "__metadata__"
    bool seen_metadata_ = false;
    std::string name_;  // the tensor being read, its field being read, and what it has so far
    std::string field_;
    bool has_dtype_ = false, has_shape_ = false, has_offsets_ = false;
    std::string code_;
    std::vector<std::uint64_t> dims_, offsets_;
};

// ---- raw bytes ----------------------------------------------------------------------------------

/// The first byte of a contiguous CPU tensor.
void* raw_data(const Tensor& t) {
    switch (t.dtype()) {
        case kFloat32:
            return t.data_ptr<float>();
        case kFloat64:
            return t.data_ptr<double>();
        case kInt64:
            return t.data_ptr<std::int64_t>();
        case kBool:
            return t.data_ptr<bool>();
        case kInt32:
            return t.data_ptr<std::int32_t>();
        case kUInt8:
            return t.data_ptr<std::uint8_t>();
    }
    return nullptr;
}

/// A bool tensor read from a file holds bytes 0 and 1 only; any other byte is a corrupt file (and
/// would be undefined behaviour as a C++ bool). Returns the offending byte's index, or -1.
std::int64_t bad_bool_byte(const Tensor& t) {
    if (t.dtype() != kBool) return -1;
    const auto* p = static_cast<const unsigned char*>(raw_data(t));
    for (std::int64_t i = 0; i < t.numel(); ++i)
        if (p[i] > 1) return i;
    return -1;
}

/// safetensors is little-endian; on a big-endian host, reverses each element's bytes in place.
void swap_to_little_endian([[maybe_unused]] void* data, [[maybe_unused]] std::size_t bytes,
                           [[maybe_unused]] std::size_t element) {
    if constexpr (std::endian::native == std::endian::big) {
        auto* p = static_cast<unsigned char*>(data);
        for (std::size_t i = 0; i + element <= bytes; i += element) std::reverse(p + i, p + i + element);
    }
}

/// Owns a file descriptor.
class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = other.fd_;
            other.fd_ = -1;
        }
        return *this;
    }
    int get() const { return fd_; }
    /// Closes now, returning close()'s result (it can report a failed write-back).
    int reset() {
        int r = fd_ >= 0 ? ::close(fd_) : 0;
        fd_ = -1;
        return r;
    }

private:
    int fd_;
};

void read_exact(int fd, void* buffer, std::uint64_t bytes, std::uint64_t offset, const char* op,
                const std::string& path) {
    auto* p = static_cast<char*>(buffer);
    while (bytes > 0) {
        std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, 1u << 30));
        ssize_t got = ::pread(fd, p, chunk, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) io_error(op, path, "cannot read", errno);
        if (got == 0)
            throw std::runtime_error(std::string(op) + ": '" + path +
                                     "': the file ended early (did it change while being read?)");
        p += got, bytes -= static_cast<std::uint64_t>(got), offset += static_cast<std::uint64_t>(got);
    }
}

void write_all(int fd, const void* buffer, std::size_t bytes, const char* op, const std::string& path) {
    const auto* p = static_cast<const char*>(buffer);
    while (bytes > 0) {
        ssize_t put = ::write(fd, p, std::min<std::size_t>(bytes, 1u << 30));
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) io_error(op, path, "cannot write", errno);
        p += put, bytes -= static_cast<std::size_t>(put);
    }
}

// ---- reading ------------------------------------------------------------------------------------

nn::NamedTensors read_file(const std::string& path, const char* op, Metadata* metadata) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) io_error(op, path, "cannot open", errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) io_error(op, path, "cannot stat", errno);
    if (!S_ISREG(st.st_mode)) throw std::runtime_error(std::string(op) + ": '" + path + "': not a regular file");
    auto file_bytes = static_cast<std::uint64_t>(st.st_size);

    if (file_bytes < 8)
        bad(op, path, "the file has " + std::to_string(file_bytes) + " bytes, too few for the 8-byte header length");
    unsigned char prefix[8];
    read_exact(fd.get(), prefix, 8, 0, op, path);
    std::uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | prefix[i];
    if (header_bytes > kMaxHeaderBytes)
        bad(op, path,
            "the header length " + std::to_string(header_bytes) + " exceeds the limit of " +
                std::to_string(kMaxHeaderBytes) + " bytes (is this a safetensors file?)");
    if (header_bytes > file_bytes - 8)
        bad(op, path,
            "the header length " + std::to_string(header_bytes) + " is larger than the rest of the file (" +
                std::to_string(file_bytes - 8) + " bytes)");
    std::string header(static_cast<std::size_t>(header_bytes), '\0');
    read_exact(fd.get(), header.data(), header_bytes, 8, op, path);

    Metadata found;
    std::uint64_t data_start = 8 + header_bytes;
    std::vector<Entry> entries = HeaderReader(op, path, file_bytes - data_start).read(header, found);

    nn::NamedTensors tensors;
    tensors.reserve(entries.size());
    for (const Entry& e : entries) {
        Tensor t = empty(e.shape, e.dtype);
        std::uint64_t bytes = e.end - e.begin;
        if (bytes > 0) {
            read_exact(fd.get(), raw_data(t), bytes, data_start + e.begin, op, path);
            swap_to_little_endian(raw_data(t), static_cast<std::size_t>(bytes), element_size(e.dtype));
            if (std::int64_t i = bad_bool_byte(t); i >= 0)
                bad(op, path,
                    "tensor " + quoted(e.name) + " of dtype BOOL holds the byte " +
                        std::to_string(static_cast<const unsigned char*>(raw_data(t))[i]) + " at element " +
                        std::to_string(i) + " (only 0 and 1 are booleans); the file is corrupt");
        }
        tensors.emplace_back(e.name, std::move(t));
    }
    if (metadata) *metadata = std::move(found);
    return tensors;
}

// ---- writing ------------------------------------------------------------------------------------

/// Permissions for a new file as open() would give them: 0666 less the process umask. The umask is
/// read from /proc (Linux), since setting it to read it back would race with other threads.
mode_t new_file_mode() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        unsigned mask = 0;
        auto digits = line.find_first_of("01234567");
        if (line.rfind("Umask:", 0) == 0 && digits != std::string::npos &&
            std::from_chars(line.data() + digits, line.data() + line.size(), mask, 8).ec == std::errc{})
            return static_cast<mode_t>(0666 & ~mask);
    }
    return 0644;
}

/// The file a save to `path` must replace: `path` itself, or the file its chain of symbolic links
/// ends at (which need not exist yet), so that saving over a link updates the link's target and
/// keeps the link, as writing through it in Python would.
std::string resolve_links(const std::string& path, const char* op) {
    std::string at = path;
    for (int hops = 0;; ++hops) {
        struct stat st {};
        if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at;
        if (hops == 40) io_error(op, path, "too many levels of symbolic links", ELOOP);
        std::string target(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
        const ssize_t n = ::readlink(at.c_str(), target.data(), target.size());
        if (n < 0) io_error(op, path, "cannot read the symbolic link " + quoted(at), errno);
        target.resize(static_cast<std::size_t>(n));
        if (target.empty() || target[0] != '/') {  // relative to the link's own directory
            const auto slash = at.find_last_of('/');
            if (slash != std::string::npos) target = at.substr(0, slash + 1) + target;
        }
        at = target;
    }
}

/// The directory part of `path` ("." for a bare name).
std::string directory_of(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

/// Temporaries of a save to `path` are `<path>.xgrad-tmp.XXXXXX`.
std::string temp_prefix(const std::string& path) {
    return path + ".xgrad-tmp.";
}

/// Removes temporaries that earlier saves to `path` left behind when their process died (kill -9
/// between writing and renaming). A live writer holds an flock on its temporary, and the kernel
/// drops it when the process dies: a temporary whose lock can be taken has no owner any more.
void remove_stale_temporaries(const std::string& path) {
    const std::string dir = directory_of(path);
    const auto slash = path.find_last_of('/');
    const std::string prefix = temp_prefix(slash == std::string::npos ? path : path.substr(slash + 1));
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;  // best effort: the save itself reports a directory it cannot use
    std::vector<std::string> stale;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name.rfind(prefix, 0) != 0 || name.size() != prefix.size() + 6) continue;
        const std::string full = dir + "/" + name;
        Fd fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (fd.get() >= 0 && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) stale.push_back(full);
    }
    ::closedir(d);
    for (const auto& f : stale) ::unlink(f.c_str());
}

/// A temporary file next to the target that becomes the target on commit() and disappears otherwise.
///
/// Where the file system allows (ext4, xfs, tmpfs ...), the temporary is an unnamed O_TMPFILE inode
/// while it is written, so a process killed then leaves nothing behind; it gets a name, under the
/// writer's flock, only for the rename. Elsewhere it is a named file locked from its creation.
/// Either way the next save to the same target removes what a killed process left.
class AtomicFile {
public:
    AtomicFile(const std::string& path, const char* op)
        : path_(path), target_(resolve_links(path, op)), op_(op), fd_(-1) {
        remove_stale_temporaries(target_);
        fd_ = Fd(::open(directory_of(target_).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
        if (fd_.get() < 0) {  // no O_TMPFILE here: a named temporary, locked at once
            temp_ = temp_prefix(target_) + "XXXXXX";
            fd_ = Fd(::mkostemp(temp_.data(), O_CLOEXEC));
            if (fd_.get() < 0) io_error(op_, path_, "cannot create a temporary file in its directory", errno);
            named_ = true;
        }
        if (::flock(fd_.get(), LOCK_EX) != 0) io_error(op_, path_, "cannot lock the temporary file", errno);
    }
    ~AtomicFile() {
        if (named_ && !committed_) ::unlink(temp_.c_str());
    }
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const void* data, std::size_t bytes) { write_all(fd_.get(), data, bytes, op_, path_); }

    /// Flushes to disk and renames over the target, keeping an existing file's permissions.
    void commit() {
        struct stat st {};
        mode_t mode = ::stat(target_.c_str(), &st) == 0 ? st.st_mode & 07777 : new_file_mode();
        if (::fchmod(fd_.get(), mode) != 0) io_error(op_, path_, "cannot set permissions", errno);
        if (::fsync(fd_.get()) != 0) io_error(op_, path_, "cannot flush to disk", errno);
        if (!named_) give_name();
        if (::rename(temp_.c_str(), target_.c_str()) != 0) io_error(op_, path_, "cannot replace the file", errno);
        committed_ = true;
        if (fd_.reset() != 0) io_error(op_, path_, "cannot close", errno);
        // Make the rename itself durable; the file is already complete, so this is best effort.
        Fd dir_fd(::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
    }

private:
    /// Links the unnamed temporary into the directory under a fresh temporary name.
    void give_name() {
        const std::string proc = "/proc/self/fd/" + std::to_string(fd_.get());
        static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        std::random_device entropy;
        for (int attempt = 0; attempt < 100; ++attempt) {
            temp_ = temp_prefix(target_);
            for (int i = 0; i < 6; ++i) temp_ += kChars[entropy() % (sizeof kChars - 1)];
            if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, temp_.c_str(), AT_SYMLINK_FOLLOW) == 0) {
                named_ = true;
                return;
            }
            if (errno != EEXIST) io_error(op_, path_, "cannot name the temporary file", errno);
        }
        io_error(op_, path_, "cannot name the temporary file", EEXIST);
    }

    const std::string& path_;  // as the user gave it, for messages
    std::string target_;       // the file replaced: path_ with its symbolic links followed
    const char* op_;
    std::string temp_;
    Fd fd_;
    bool named_ = false;
    bool committed_ = false;
};

void write_file(const nn::NamedTensors& tensors, const std::string& path, const Metadata& metadata, const char* op) {
    // Check and prepare everything before the temporary file exists.
    struct Item {
        const std::string* name;
        Tensor data;  // contiguous, CPU, little-endian
    };
    std::vector<Item> items;
    std::set<std::string> seen;
    for (const auto& [name, t] : tensors) {
        if (!t.defined()) bad(op, path, "tensor " + quoted(name) + " is undefined");
        if (name == "__metadata__") bad(op, path, "\"__metadata__\" is reserved and cannot name a tensor");
        if (!is_utf8(name)) bad(op, path, "tensor name " + quoted(name) + " is not valid UTF-8");
        if (!seen.insert(name).second) bad(op, path, "tensor name " + quoted(name) + " appears twice");
        Tensor data = t.detach().cpu().contiguous();
        if constexpr (std::endian::native == std::endian::big) {
            data = data.clone();
            swap_to_little_endian(raw_data(data), static_cast<std::size_t>(data.numel()) * element_size(data.dtype()),
                                  element_size(data.dtype()));
        }
        items.push_back({&name, data});
    }
    for (const auto& [key, value] : metadata)
        if (!is_utf8(key) || !is_utf8(value)) bad(op, path, "metadata entry " + quoted(key) + " is not valid UTF-8");
    // Wider elements first, as the reference implementation orders them, keeps every tensor aligned
    // to its element size (the header is padded to 8 bytes) for readers that map the file.
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return element_size(a.data.dtype()) > element_size(b.data.dtype());
    });

    OrderedJson json = OrderedJson::object();
    if (!metadata.empty()) json["__metadata__"] = metadata;
    std::uint64_t offset = 0;
    for (const Item& item : items) {
        std::uint64_t end = offset + static_cast<std::uint64_t>(item.data.numel()) * element_size(item.data.dtype());
        json[*item.name] = {{"dtype", dtype_code(item.data.dtype())},
                            {"shape", item.data.shape().vec()},
                            {"data_offsets", {offset, end}}};
        offset = end;
    }
    std::string header = json.dump();
    header.append((8 - header.size() % 8) % 8, ' ');
    if (header.size() > kMaxHeaderBytes)
        bad(op, path, "the header would exceed " + std::to_string(kMaxHeaderBytes) + " bytes");

    unsigned char prefix[8];
    for (int i = 0; i < 8; ++i)
        prefix[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(header.size()) >> (8 * i));
    AtomicFile file(path, op);
    file.write(prefix, sizeof prefix);
    file.write(header.data(), header.size());
    for (const Item& item : items) {
        auto bytes = static_cast<std::size_t>(item.data.numel()) * element_size(item.data.dtype());
        if (bytes > 0) file.write(raw_data(item.data), bytes);
    }
    file.commit();
}

// ---- .npy files ---------------------------------------------------------------------------------
//
// NumPy's format (numpy.lib.format): the magic string "\x93NUMPY", the format version (1.0, 2.0 or
// 3.0: two bytes), the header's length (2 bytes in 1.0, 4 after), the header, then the elements. The
// header is a Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyMagicBytes = 6;
// NumPy's own reader stops at 10000 bytes unless told otherwise; real headers are under 200.
constexpr std::uint64_t kMaxNpyHeaderBytes = 10000;
// NumPy aligns the data to 64 bytes, and leaves room for the growth axis's size to reach 21 digits.
constexpr std::size_t kNpyAlign = 64;
constexpr std::size_t kNpyGrowthDigits = 21;

/// The 'descr' xgrad writes for `dtype`: little-endian, or '|' where the byte order does not matter.
const char* npy_code(DType dtype) {
    switch (dtype) {
        case kFloat32:
            return "<f4";
        case kFloat64:
            return "<f8";
        case kInt64:
            return "<i8";
        case kInt32:
            return "<i4";
        case kUInt8:
            return "|u1";
        case kBool:
            return "|b1";
    }
    return "?";
}

/// What a .npy header says.
struct NpyHeader {
    std::string descr;
    DType dtype = kFloat32;
    bool big_endian = false;
    bool fortran_order = false;
    std::vector<std::uint64_t> shape;
};

/// Parses the header's dict literal: exactly the keys 'descr', 'fortran_order' and 'shape', in any
/// order, with the Python spellings NumPy writes (and 'L' suffixes from Python 2's files).
class NpyHeaderReader {
public:
    NpyHeaderReader(const char* op, const std::string& path, std::string_view text) : op_(op), path_(path), s_(text) {}

    NpyHeader read() {
        NpyHeader h;
        bool has_descr = false, has_order = false, has_shape = false;
        expect('{');
        while (!next_is('}')) {
            std::string key = read_string("a key");
            bool* seen = key == "descr"           ? &has_descr
                         : key == "fortran_order" ? &has_order
                         : key == "shape"         ? &has_shape
                                                  : nullptr;
            if (!seen) fail("unknown key " + quoted(key) + " (a .npy header has 'descr', 'fortran_order' and 'shape')");
            if (*seen) fail("the key '" + key + "' appears twice");
            *seen = true;
            expect(':');
            if (key == "descr")
                read_descr(h);
            else if (key == "fortran_order")
                h.fortran_order = read_bool();
            else
                h.shape = read_shape();
            if (!next_is(',')) break;
            ++pos_;
        }
        expect('}');
        skip_ws();
        if (pos_ != s_.size()) syntax("unexpected text after the dict");
        if (!has_descr) fail("the header has no 'descr'");
        if (!has_order) fail("the header has no 'fortran_order'");
        if (!has_shape) fail("the header has no 'shape'");
        return h;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { bad(op_, path_, what); }
    [[noreturn]] void syntax(const std::string& what) const {
        fail("the header is not a Python dict literal: " + what + " (byte " + std::to_string(pos_) + " of the header)");
    }

    void skip_ws() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }
    bool next_is(char c) {
        skip_ws();
        return pos_ < s_.size() && s_[pos_] == c;
    }
    void expect(char c) {
        if (!next_is(c)) syntax(std::string("expected '") + c + "'");
        ++pos_;
    }
    /// A quoted string without escapes (no key or dtype needs one).
    std::string read_string(const char* what) {
        skip_ws();
        if (pos_ == s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) syntax(std::string("expected ") + what);
        char quote = s_[pos_++];
        std::size_t end = s_.find(quote, pos_);
        if (end == std::string_view::npos) syntax("unterminated string");
        std::string_view text = s_.substr(pos_, end - pos_);
        if (text.find('\\') != std::string_view::npos) syntax("escapes in strings are not supported");
        pos_ = end + 1;
        return std::string(text);
    }
    bool read_bool() {
        skip_ws();
        for (auto [word, value] :
             {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}})
            if (s_.substr(pos_, word.size()) == word) {
                pos_ += word.size();
                return value;
            }
        fail("'fortran_order' must be True or False");
    }
    std::uint64_t read_size() {
        skip_ws();
        if (pos_ == s_.size() || s_[pos_] < '0' || s_[pos_] > '9')
            fail("the sizes in 'shape' must be non-negative integers");
        std::uint64_t value = 0;
        auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), value);
        if (ec != std::errc{}) fail("a size in 'shape' is 2^64 or more");
        pos_ = static_cast<std::size_t>(end - s_.data());
        if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2's long
        return value;
    }
    /// A tuple: (), (3,), (2, 3) or (2, 3,); a lone (3) is an int in Python, not a shape.
    std::vector<std::uint64_t> read_shape() {
        if (!next_is('(')) fail("'shape' must be a tuple of integers");
        ++pos_;
        std::vector<std::uint64_t> shape;
        bool comma = false;
        while (!next_is(')')) {
            if (shape.size() == kMaxDims) fail("the shape has more than " + std::to_string(kMaxDims) + " dimensions");
            shape.push_back(read_size());
            comma = next_is(',');
            if (!comma) break;
            ++pos_;
        }
        expect(')');
        if (shape.size() == 1 && !comma) fail("'shape' must be a tuple of integers: (n) is a number, (n,) a tuple");
        return shape;
    }
    void read_descr(NpyHeader& h) {
        if (next_is('[')) fail("'descr' is a structured dtype (a list of fields), which xgrad does not support");
        std::string descr = h.descr = read_string("a dtype string for 'descr'");
        std::string_view code = descr;
        char order = code.empty() ? '?' : code[0];
        if (order == '<' || order == '>' || order == '=' || order == '|') code.remove_prefix(1);
        h.big_endian = order == '>' || (order != '<' && std::endian::native == std::endian::big);
        const DType* known = std::find_if(std::begin(kAllDTypes), std::end(kAllDTypes),
                                          [&](DType d) { return code == std::string_view(npy_code(d)).substr(1); });
        if (known != std::end(kAllDTypes))
            h.dtype = *known;
        else
            fail("dtype " + quoted(descr) +
                 " is not one xgrad reads (float32 '<f4', float64 '<f8', int64 '<i8', int32 '<i4', uint8 '|u1' or "
                 "bool '|b1', either byte order); "
                 "convert the array first, e.g. with a.astype(numpy.float32)");
    }

    const char* op_;
    const std::string& path_;
    std::string_view s_;
    std::size_t pos_ = 0;
};

/// Reverses each element's bytes: data of the other byte order.
void reverse_bytes(void* data, std::size_t bytes, std::size_t element) {
    auto* p = static_cast<unsigned char*>(data);
    for (std::size_t i = 0; i + element <= bytes; i += element) std::reverse(p + i, p + i + element);
}

/// The reversed dimensions: a Fortran-ordered array is the C-ordered array of its transpose.
Dims reversed_dims(std::int64_t ndim) {
    std::vector<std::int64_t> order;
    for (std::int64_t d = ndim - 1; d >= 0; --d) order.push_back(d);
    return Dims(order);
}

Tensor read_npy(const std::string& path) {
    const char* op = "load_npy";
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) io_error(op, path, "cannot open", errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) io_error(op, path, "cannot stat", errno);
    if (!S_ISREG(st.st_mode)) throw std::runtime_error(std::string(op) + ": '" + path + "': not a regular file");
    auto file_bytes = static_cast<std::uint64_t>(st.st_size);

    unsigned char prefix[12] = {};
    if (file_bytes < 10)
        bad(op, path, "the file has " + std::to_string(file_bytes) + " bytes, too few for a .npy header");
    read_exact(fd.get(), prefix, 10, 0, op, path);
    if (std::memcmp(prefix, kNpyMagic, kNpyMagicBytes) != 0)
        bad(op, path, "the file does not start with \\x93NUMPY (is it a .npy file?)");
    int major = prefix[6], minor = prefix[7];
    if (major < 1 || major > 3 || minor != 0)
        bad(op, path,
            "format version " + std::to_string(major) + "." + std::to_string(minor) +
                " is not one xgrad reads (1.0, 2.0 and 3.0)");
    std::uint64_t prefix_bytes = major == 1 ? 10 : 12;
    if (file_bytes < prefix_bytes)
        bad(op, path, "the file has " + std::to_string(file_bytes) + " bytes, too few for a .npy header");
    if (major > 1) read_exact(fd.get(), prefix + 10, 2, 10, op, path);
    std::uint64_t header_bytes = 0;
    for (std::uint64_t i = prefix_bytes; i-- > 8;) header_bytes = (header_bytes << 8) | prefix[i];
    if (header_bytes > kMaxNpyHeaderBytes)
        bad(op, path,
            "the header length " + std::to_string(header_bytes) + " exceeds the limit of " +
                std::to_string(kMaxNpyHeaderBytes) + " bytes");
    if (header_bytes > file_bytes - prefix_bytes)
        bad(op, path,
            "the header length " + std::to_string(header_bytes) + " is larger than the rest of the file (" +
                std::to_string(file_bytes - prefix_bytes) + " bytes)");
    std::string header(static_cast<std::size_t>(header_bytes), '\0');
    read_exact(fd.get(), header.data(), header_bytes, prefix_bytes, op, path);
    NpyHeader h = NpyHeaderReader(op, path, header).read();

    // As for safetensors: every stride must fit in int64, and the data must be exactly the elements.
    Shape shape;
    std::uint64_t extent = 1, numel = 1, bytes = 0;
    for (std::uint64_t size : h.shape) {
        if (__builtin_mul_overflow(extent, std::max<std::uint64_t>(size, 1), &extent) ||
            extent > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            bad(op, path, "the shape is too large");
        numel *= size;
        shape.push_back(static_cast<std::int64_t>(size));
    }
    std::size_t element = element_size(h.dtype);
    if (__builtin_mul_overflow(numel, element, &bytes)) bad(op, path, "the shape is too large");
    std::uint64_t data_start = prefix_bytes + header_bytes, data_bytes = file_bytes - data_start;
    if (data_bytes != bytes)
        bad(op, path,
            "shape " + to_string(shape) + " of " + h.descr + " needs " + std::to_string(bytes) +
                " bytes of data, but the file has " + std::to_string(data_bytes) +
                (data_bytes < bytes ? "; it may be truncated" : " (one array per file)"));

    // Fortran order: the bytes are the C-ordered transpose, which is read as such and transposed back.
    std::vector<std::int64_t> stored = shape.vec();
    if (h.fortran_order) std::reverse(stored.begin(), stored.end());
    Tensor t = empty(Shape(stored), h.dtype);
    if (bytes > 0) {
        read_exact(fd.get(), raw_data(t), bytes, data_start, op, path);
        if (h.big_endian != (std::endian::native == std::endian::big))
            reverse_bytes(raw_data(t), static_cast<std::size_t>(bytes), element);
        if (std::int64_t i = bad_bool_byte(t); i >= 0)
            bad(op, path,
                "the bool array holds the byte " + std::to_string(static_cast<const unsigned char*>(raw_data(t))[i]) +
                    " at element " + std::to_string(i) + " (only 0 and 1 are booleans); the file is corrupt");
    }
    if (h.fortran_order && t.dim() > 1) t = t.permute(reversed_dims(t.dim())).contiguous();
    return t;
}

void write_npy(const Tensor& tensor, const std::string& path, bool fortran_order) {
    const char* op = "save_npy";
    if (!tensor.defined()) bad(op, path, "the tensor is undefined");
    if (static_cast<std::size_t>(tensor.dim()) > kMaxDims)
        bad(op, path, "the tensor has more than " + std::to_string(kMaxDims) + " dimensions");
    Tensor data = tensor.detach().cpu();
    data = fortran_order && data.dim() > 1 ? data.permute(reversed_dims(data.dim())).contiguous() : data.contiguous();
    std::size_t element = element_size(data.dtype()), bytes = static_cast<std::size_t>(data.numel()) * element;

    // numpy.lib.format's header, space for space: keys sorted, then room for the growth axis (the
    // first, or the last in Fortran order) to grow to 21 digits, then padding to 64 bytes and '\n'.
    const char* descr = npy_code(data.dtype());
    std::string shape = "(";
    for (std::int64_t d = 0; d < tensor.dim(); ++d) shape += (d > 0 ? ", " : "") + std::to_string(tensor.size(d));
    shape += tensor.dim() == 1 ? ",)" : ")";
    std::string header = std::string("{'descr': '") + descr +
                         "', 'fortran_order': " + (fortran_order ? "True" : "False") + ", 'shape': " + shape + ", }";
    if (tensor.dim() > 0)
        header.append(kNpyGrowthDigits - std::to_string(tensor.size(fortran_order ? -1 : 0)).size(), ' ');
    auto padding = [&](std::size_t length_bytes) {
        return kNpyAlign - (kNpyMagicBytes + 2 + length_bytes + header.size() + 1) % kNpyAlign;
    };
    // Format 1.0 stores the header's length in 2 bytes; a longer header needs 2.0 and 4 bytes.
    std::size_t length_bytes = header.size() + padding(2) + 1 <= 0xFFFF ? 2 : 4;
    header.append(padding(length_bytes), ' ');
    header += '\n';

    std::string prefix(kNpyMagic, kNpyMagicBytes);
    prefix += static_cast<char>(length_bytes == 2 ? 1 : 2);
    prefix += '\0';
    for (std::size_t i = 0; i < length_bytes; ++i) prefix += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    if constexpr (std::endian::native == std::endian::big) {
        data = data.clone();
        reverse_bytes(raw_data(data), bytes, element);
    }
    AtomicFile file(path, op);
    file.write(prefix.data(), prefix.size());
    file.write(header.data(), header.size());
    if (bytes > 0) file.write(raw_data(data), bytes);
    file.commit();
}

}  // namespace

void save_tensors(const nn::NamedTensors& tensors, const std::string& path, const Metadata& metadata) {
    write_file(tensors, path, metadata, "save_tensors");
}

nn::NamedTensors load_tensors(const std::string& path, Metadata* metadata) {
    return read_file(path, "load_tensors", metadata);
}

void save(const nn::Module& module, const std::string& path) {
    // named_modules() only lists; it is non-const because it hands out mutable pointers.
    for (auto& [name, m] : const_cast<nn::Module&>(module).named_modules())
        if (m->has_uninitialized_parameters())
            bad("save", path,
                "the module " + (name.empty() ? m->name() : quoted(name) + " (" + m->name() + ")") +
                    " has uninitialized parameters: their shape is fixed by its first forward. Run a forward "
                    "first, or give the module its shape when constructing it");
    write_file(module.state_dict(), path, {{"format", "pt"}}, "save");
}

void load(nn::Module& module, const std::string& path, bool strict) {
    nn::NamedTensors state = read_file(path, "load", nullptr);
    try {
        module.load_state_dict(state, strict);  // checks every name, shape and dtype before writing
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("load: '" + path + "': " + e.what());
    }
}

void save_npy(const Tensor& tensor, const std::string& path, bool fortran_order) {
    write_npy(tensor, path, fortran_order);
}

Tensor load_npy(const std::string& path) {
    return read_npy(path);
}

}  // namespace xgrad
