// Fixture for tools/check-sizes.py's self-test (tests/docs/CMakeLists.txt, docs.sizes.self-test):
// run with --max-function 10 --max-file 80, exactly 7 problems must be found: the file itself
// (over 80 lines), elevenLines, Holder::Holder, Holder::twelve, the macro-defined MODULE body,
// the extern "C" function entry and Aligned::eleven.
// Every other brace below (strings, comments, initialisers, an enum) must not count.
#include <string>
#define MODULE(name) void module_##name()

namespace fixture {

int tenLines(int x) {             // line 1 of 10: at the limit, not over it
  std::string s = "}}}{";         // braces in a string
  char c = '}';                   // and in a character literal
  int big = 1'000'000;            // a digit separator is not a quote
  /* { a comment brace */
  std::string r = R"x(raw { } })x";
  x += int(s.size()) + c + big;
  x += int(r.size());
  return x;
}                                 // line 10

int elevenLines(int x) {
  // {
  x += 1;
  x += 2;
  x += 3;
  x += 4;
  x += 5;
  x += 6;
  x += 7;
  return x;
}

constexpr int kTable[] = {
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    11, 12, 13, 14, 15, 16, 17, 18,
    19, 20, 21, 22, 23, 24, 25, 26,
    27, 28, 29, 30, 31, 32, 33, 34,
    35, 36, 37, 38, 39, 40, 41, 42,
    43, 44, 45, 46, 47, 48, 49, 50,
    51, 52, 53, 54, 55, 56, 57, 58,
    59, 60, 61, 62, 63, 64, 65, 66,
    67, 68, 69, 70, 71, 72, 73, 74,
    75, 76, 77, 78, 79, 80, 81, 82,
};

enum class Colour {
  Red, Green, Blue, Cyan, Magenta, Yellow, Black, White, Grey, Orange, Pink, Brown,
};

class Holder {
public:
  Holder(int a, int b) : a_{a}, b_(b), c_{a + b} {
    a_ += 1;
    a_ += 2;
    a_ += 3;
    a_ += 4;
    a_ += 5;
    a_ += 6;
    a_ += 7;
    a_ += 8;
    a_ += 9;
  }
  int twelve() const {
    auto f = [&](int y) {
      return y + a_;
    };
    int t = f(1);
    t += f(2);
    t += f(3);
    t += f(4);
    t += f(5);
    t += f(6);
    return t;
  }

private:
  int a_, b_, c_;
};

} // namespace fixture

MODULE(sample) {
  int m = 0;
  m += 1;
  m += 2;
  m += 3;
  m += 4;
  m += 5;
  m += 6;
  m += 7;
  (void)m;
}

extern "C" int entry(const char *data) {
  int n = 0;
  n += data[0];
  n += data[1];
  n += data[2];
  n += data[3];
  n += data[4];
  n += data[5];
  n += data[6];
  return n;
}

extern "C" {
struct alignas(16) Aligned {
  int eleven() const {
    int v = 0;
    v += 1;
    v += 2;
    v += 3;
    v += 4;
    v += 5;
    v += 6;
    v += 7;
    return v;
  }
  int two() const { return 2; }
};
}
