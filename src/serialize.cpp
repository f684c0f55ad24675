// safetensors files: a JSON writer and a strict, bounded JSON parser for the header, atomic saves, and
// loads that validate the whole file before anything reaches a module.
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

// ---- JSON writing -------------------------------------------------------------------------------

/// Appends `s` as a JSON string literal (UTF-8 passes through; quotes and control characters are escaped).
void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

/// A name from a file, quoted and escaped for an error message, and cut short if it is very long.
std::string quoted(std::string_view name) {
    constexpr std::size_t kMaxShown = 100;
    std::string out;
    append_json_string(out, name.substr(0, kMaxShown));
    if (name.size() > kMaxShown) out.insert(out.size() - 1, "...");
    return out;
}

/// The offset of the first byte that breaks UTF-8 (overlong forms and surrogates included), or npos.
std::size_t invalid_utf8_at(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t extra = 0;
        std::uint32_t cp = 0;
        if (c >= 0xC2 && c <= 0xDF) {
            extra = 1, cp = c & 0x1Fu;
        } else if (c >= 0xE0 && c <= 0xEF) {
            extra = 2, cp = c & 0x0Fu;
        } else if (c >= 0xF0 && c <= 0xF4) {
            extra = 3, cp = c & 0x07u;
        } else {
            return i;
        }
        if (s.size() - i <= extra) return i;
        for (std::size_t k = 1; k <= extra; ++k) {
            auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0u) != 0x80u) return i;
            cp = (cp << 6) | (cc & 0x3Fu);
        }
        if ((extra == 2 && cp < 0x800) || (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += extra + 1;
    }
    return std::string_view::npos;
}

// ---- JSON parsing -------------------------------------------------------------------------------
//
// The header is read by a pull parser that the header's schema drives: values go straight into
// Entries, with no document tree in between, and nothing recurses. Memory stays a small multiple of
// the header's size however hostile the file, and there is no nesting depth to bound.

enum class JsonKind { kNull, kBool, kNumber, kString, kArray, kObject };

const char* kind_name(JsonKind kind) {
    switch (kind) {
        case JsonKind::kNull:
            return "null";
        case JsonKind::kBool:
            return "a boolean";
        case JsonKind::kNumber:
            return "a number";
        case JsonKind::kString:
            return "a string";
        case JsonKind::kArray:
            return "an array";
        case JsonKind::kObject:
            return "an object";
    }
    return "a value";
}

/// Where and why the header is not JSON.
struct JsonError {
    std::size_t pos;
    std::string what;
};

/// Reads RFC 8259 JSON token by token; the text must already be valid UTF-8.
class JsonReader {
public:
    explicit JsonReader(std::string_view text) : s_(text) {}

    /// The kind of the next value, which is not consumed.
    JsonKind peek() {
        skip_ws();
        if (pos_ == s_.size()) error("unexpected end of the header");
        char c = s_[pos_];
        if (c == '{') return JsonKind::kObject;
        if (c == '[') return JsonKind::kArray;
        if (c == '"') return JsonKind::kString;
        if (c == '-' || (c >= '0' && c <= '9')) return JsonKind::kNumber;
        if (s_.substr(pos_, 4) == "true" || s_.substr(pos_, 5) == "false") return JsonKind::kBool;
        if (s_.substr(pos_, 4) == "null") return JsonKind::kNull;
        error(c >= 0x20 && c < 0x7F ? std::string("unexpected character '") + c + "'"
                                    : "unexpected byte " + std::to_string(static_cast<unsigned char>(c)));
    }
    /// Consumes the '{' or '[' that peek() found.
    void open() { ++pos_; }
    /// Moves to the next member or element of the object or array closed by `close`; false at its end.
    bool next(bool& first, char close) {
        skip_ws();
        if (pos_ == s_.size()) error("unexpected end of the header");
        if (s_[pos_] == close) {
            ++pos_;
            return false;
        }
        if (!first) {
            if (s_[pos_] != ',') error(std::string("expected ',' or '") + close + "'");
            ++pos_;
        }
        first = false;
        return true;
    }
    /// An object member's key and the ':' after it.
    std::string read_key() {
        skip_ws();
        if (pos_ == s_.size() || s_[pos_] != '"') error("expected a string key");
        std::string key = read_string();
        skip_ws();
        if (pos_ == s_.size() || s_[pos_] != ':') error("expected ':' after a key");
        ++pos_;
        return key;
    }
    /// The string that peek() found, unescaped.
    std::string read_string() {
        skip_ws();
        ++pos_;  // '"'
        std::string out;
        while (true) {
            if (pos_ == s_.size()) error("unterminated string");
            auto c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) error("control character in a string (it must be escaped)");
            ++pos_;
            if (c != '\\') {
                out += static_cast<char>(c);  // bytes of a UTF-8 sequence, validated beforehand
                continue;
            }
            if (pos_ == s_.size()) error("unterminated string");
            char e = s_[pos_++];
            switch (e) {
                case '"':
                case '\\':
                case '/':
                    out += e;
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u':
                    append_utf8(out, read_escaped_code_point());
                    break;
                default:
                    --pos_, error("invalid escape in a string");
            }
        }
    }
    /// The literal text of the number that peek() found, checked against JSON's grammar.
    std::string read_number() {
        skip_ws();
        std::size_t start = pos_;
        if (s_[pos_] == '-') ++pos_;
        if (pos_ < s_.size() && s_[pos_] == '0') {
            ++pos_;
        } else if (is_digit()) {
            while (is_digit()) ++pos_;
        } else {
            error("invalid number");
        }
        if (pos_ < s_.size() && s_[pos_] == '.') {
            ++pos_;
            if (!is_digit()) error("invalid number: digits must follow '.'");
            while (is_digit()) ++pos_;
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            ++pos_;
            if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
            if (!is_digit()) error("invalid number: digits must follow the exponent");
            while (is_digit()) ++pos_;
        }
        return std::string(s_.substr(start, pos_ - start));
    }
    /// Consumes the `null` that peek() found.
    void read_null() {
        skip_ws();
        pos_ += 4;
    }
    /// Nothing but whitespace (the header's padding) may follow the top-level value.
    void finish() {
        skip_ws();
        if (pos_ != s_.size()) error("unexpected text after the top-level value");
    }

private:
    [[noreturn]] void error(const std::string& what) const { throw JsonError{pos_, what}; }

    void skip_ws() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }
    bool is_digit() const { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; }

    std::uint32_t hex4() {
        if (s_.size() - pos_ < 4) error("a \\u escape needs four hex digits");
        std::uint32_t cp = 0;
        for (int k = 0; k < 4; ++k) {
            char h = s_[pos_++];
            cp <<= 4;
            if (h >= '0' && h <= '9')
                cp |= static_cast<std::uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f')
                cp |= static_cast<std::uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                cp |= static_cast<std::uint32_t>(h - 'A' + 10);
            else
                error("a \\u escape needs four hex digits");
        }
        return cp;
    }

    /// The code point of `\uXXXX`, or of a `\uD8xx\uDCxx` surrogate pair (a lone surrogate is an error).
    std::uint32_t read_escaped_code_point() {
        std::uint32_t cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) error("unpaired surrogate in a \\u escape");
        if (cp < 0xD800 || cp > 0xDBFF) return cp;
        if (s_.substr(pos_, 2) != "\\u") error("unpaired surrogate in a \\u escape");
        pos_ += 2;
        std::uint32_t low = hex4();
        if (low < 0xDC00 || low > 0xDFFF) error("unpaired surrogate in a \\u escape");
        return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }

    static void append_utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::string_view s_;
    std::size_t pos_ = 0;
};

// ---- the safetensors header ---------------------------------------------------------------------

// More dimensions than any real tensor has; the bound keeps a hostile shape list from costing memory.
constexpr std::size_t kMaxDims = 1024;

const char* dtype_code(DType dtype) {
    switch (dtype) {
        case kFloat32:
            return "F32";
        case kFloat64:
            return "F64";
        case kInt64:
            return "I64";
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
class HeaderReader {
public:
    HeaderReader(const char* op, const std::string& path, std::uint64_t data_bytes)
        : op_(op), path_(path), data_bytes_(data_bytes) {}

    std::vector<Entry> read(const std::string& header, Metadata& metadata) const {
        if (auto at = invalid_utf8_at(header); at != std::string::npos)
            fail("the header is not valid UTF-8 (byte " + std::to_string(at) + " of the header)");
        std::vector<Entry> entries;
        try {
            JsonReader json(header);
            if (JsonKind k = json.peek(); k != JsonKind::kObject)
                fail(std::string("the header must be a JSON object, not ") + kind_name(k));
            json.open();
            bool seen_metadata = false;
            for (bool first = true; json.next(first, '}');) {
                std::string key = json.read_key();
                if (key != "__metadata__") {
                    entries.push_back(read_entry(json, std::move(key)));
                } else if (seen_metadata) {
                    fail("the header has \"__metadata__\" twice");
                } else {
                    seen_metadata = true;
                    read_metadata(json, metadata);
                }
            }
            json.finish();
        } catch (const JsonError& e) {
            fail("the header is not valid JSON: " + e.what + " at byte " + std::to_string(e.pos) + " of the header");
        }
        check_unique(entries);
        check_layout(entries);
        return entries;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { bad(op_, path_, what); }

    void read_metadata(JsonReader& json, Metadata& metadata) const {
        JsonKind k = json.peek();
        if (k == JsonKind::kNull) return json.read_null();  // the reference implementation accepts null
        if (k != JsonKind::kObject) fail(std::string("\"__metadata__\" must be an object, not ") + kind_name(k));
        json.open();
        for (bool first = true; json.next(first, '}');) {
            std::string key = json.read_key();
            if (JsonKind v = json.peek(); v != JsonKind::kString)
                fail("\"__metadata__\" values must be strings; " + quoted(key) + " is " + kind_name(v));
            if (!metadata.emplace(key, json.read_string()).second)
                fail("\"__metadata__\" has the key " + quoted(key) + " twice");
        }
    }

    std::uint64_t read_index(JsonReader& json, const std::string& what) const {
        if (JsonKind k = json.peek(); k != JsonKind::kNumber)
            fail(what + " must be a non-negative integer, not " + kind_name(k));
        std::string t = json.read_number();
        std::uint64_t value = 0;
        auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
        if (ec != std::errc{} || end != t.data() + t.size())
            fail(what + " must be a non-negative integer below 2^64, not " + t);
        return value;
    }

    /// Opens the array that must come next (`what` names it in errors).
    void open_array(JsonReader& json, const std::string& what) const {
        if (JsonKind k = json.peek(); k != JsonKind::kArray) fail(what + " must be an array, not " + kind_name(k));
        json.open();
    }

    Entry read_entry(JsonReader& json, std::string name) const {
        std::string tensor = "tensor " + quoted(name);
        if (JsonKind k = json.peek(); k != JsonKind::kObject)
            fail(tensor + " must be described by an object, not " + kind_name(k));
        json.open();
        bool has_dtype = false, has_shape = false, has_offsets = false;
        std::string code;
        std::vector<std::uint64_t> dims, offsets;
        for (bool first = true; json.next(first, '}');) {
            std::string key = json.read_key();
            bool& seen = key == "dtype" ? has_dtype : key == "shape" ? has_shape : has_offsets;
            if (key != "dtype" && key != "shape" && key != "data_offsets")
                fail(tensor + " has an unknown field " + quoted(key));
            if (seen) fail(tensor + " has " + quoted(key) + " twice");
            seen = true;
            if (key == "dtype") {
                if (JsonKind k = json.peek(); k != JsonKind::kString)
                    fail(tensor + ": \"dtype\" must be a string, not " + kind_name(k));
                code = json.read_string();
            } else if (key == "shape") {
                open_array(json, tensor + ": \"shape\"");
                for (bool f = true; json.next(f, ']');) {
                    if (dims.size() == kMaxDims)
                        fail(tensor + ": the shape has more than " + std::to_string(kMaxDims) + " dimensions");
                    dims.push_back(read_index(json, tensor + ": a size in \"shape\""));
                }
            } else {
                std::string what = tensor + ": \"data_offsets\"";
                open_array(json, what);
                for (bool f = true; json.next(f, ']');) {
                    if (offsets.size() == 2) fail(what + " must be an array of two integers [begin, end]");
                    offsets.push_back(read_index(json, what));
                }
                if (offsets.size() != 2) fail(what + " must be an array of two integers [begin, end]");
            }
        }
        if (!has_dtype) fail(tensor + " has no \"dtype\"");
        if (!has_shape) fail(tensor + " has no \"shape\"");
        if (!has_offsets) fail(tensor + " has no \"data_offsets\"");

        Entry e{std::move(name), kFloat32, Shape(), offsets[0], offsets[1]};
        if (code == "F32")
            e.dtype = kFloat32;
        else if (code == "F64")
            e.dtype = kFloat64;
        else if (code == "I64")
            e.dtype = kInt64;
        else if (is_known_dtype(code))
            fail(tensor + " has dtype " + code +
                 ", which xgrad does not support (only F32, F64 and I64); "
                 "convert it before saving, e.g. with tensor.float() in PyTorch");
        else
            fail(tensor + " has the unknown dtype " + quoted(code));

        // Every stride must fit in int64, so the product of the sizes (zeros counted as 1) must too.
        std::uint64_t extent = 1, numel = 1;
        for (std::uint64_t size : dims) {
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
                 " bytes, but shape " + to_string(e.shape) + " of " + code + " needs " + std::to_string(bytes));
        if (e.end > data_bytes_)
            fail(tensor + ": data_offsets " + range + " go past the end of the data (" + std::to_string(data_bytes_) +
                 " bytes); the file may be truncated");
        return e;
    }

    static bool is_known_dtype(const std::string& code) {
        static const std::set<std::string> others = {"BOOL",    "U8",  "I8",      "I16",     "U16",     "F16",
                                                     "BF16",    "I32", "U32",     "U64",     "F8_E5M2", "F8_E4M3",
                                                     "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};
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
    }
    return nullptr;
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
        if (invalid_utf8_at(name) != std::string::npos)
            bad(op, path, "tensor name " + quoted(name) + " is not valid UTF-8");
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
        if (invalid_utf8_at(key) != std::string::npos || invalid_utf8_at(value) != std::string::npos)
            bad(op, path, "metadata entry " + quoted(key) + " is not valid UTF-8");
    // Wider elements first, as the reference implementation orders them, keeps every tensor aligned
    // to its element size (the header is padded to 8 bytes) for readers that map the file.
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return element_size(a.data.dtype()) > element_size(b.data.dtype());
    });

    std::string header = "{";
    if (!metadata.empty()) {
        header += "\"__metadata__\":{";
        for (const auto& [key, value] : metadata) {
            if (header.back() != '{') header += ',';
            append_json_string(header, key);
            header += ':';
            append_json_string(header, value);
        }
        header += '}';
    }
    std::uint64_t offset = 0;
    for (const Item& item : items) {
        if (header.size() > 1) header += ',';
        append_json_string(header, *item.name);
        header += ":{\"dtype\":\"";
        header += dtype_code(item.data.dtype());
        header += "\",\"shape\":[";
        for (std::int64_t i = 0; i < item.data.dim(); ++i) {
            if (i > 0) header += ',';
            header += std::to_string(item.data.size(i));
        }
        std::uint64_t end = offset + static_cast<std::uint64_t>(item.data.numel()) * element_size(item.data.dtype());
        header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
        offset = end;
    }
    header += '}';
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

}  // namespace xgrad
