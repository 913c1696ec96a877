#include "grid/stencil_expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace adgraph::grid {
namespace {

using Args = std::vector<std::string>;
using Vals = std::vector<double>;
using Ds = std::vector<ExprPtr>;

// Derivative arithmetic where nullptr is zero.
ExprPtr d_add(ExprPtr a, ExprPtr b) {
  if (!a) return b;
  if (!b) return a;
  return apply("add", {a, b});
}
ExprPtr d_sub(ExprPtr a, ExprPtr b) {
  if (!b) return a;
  if (!a) return apply("neg", {b});
  return apply("sub", {a, b});
}
ExprPtr d_mul(ExprPtr factor, ExprPtr d) {
  return d ? apply("mul", {factor, d}) : nullptr;
}
ExprPtr arg(const Expr& e, int k) { return e.args[k]; }
ExprPtr self(const Expr& e) { return std::make_shared<Expr>(e); }

std::string call(const char* f, const Args& a) {
  std::string s = std::string(f) + "(" + a[0];
  for (std::size_t k = 1; k < a.size(); ++k) s += ", " + a[k];
  return s + ")";
}
std::string infix(const Args& a, const char* op) {
  return "(" + a[0] + " " + op + " " + a[1] + ")";
}
std::string compare(const Args& a, const char* op) {
  return "(" + a[0] + " " + op + " " + a[1] + " ? 1.0 : 0.0)";
}

ExprOp binary(const char* name,
              std::function<std::string(const Args&)> emit,
              std::function<double(double, double)> f,
              std::function<ExprPtr(const Expr&, const Ds&)> d) {
  return {name,
          2,
          std::move(emit),
          [f](const Vals& v) { return f(v[0], v[1]); },
          std::move(d)};
}
ExprOp unary(const char* name,
             std::function<std::string(const Args&)> emit,
             std::function<double(double)> f,
             std::function<ExprPtr(const Expr&, const Ds&)> d) {
  return {name,
          1,
          std::move(emit),
          [f](const Vals& v) { return f(v[0]); },
          std::move(d)};
}
ExprOp comparison(const char* name,
                  const char* op,
                  std::function<bool(double, double)> f) {
  return binary(
      name,
      [op](const Args& a) { return compare(a, op); },
      [f](double a, double b) { return f(a, b) ? 1.0 : 0.0; },
      [](const Expr&, const Ds&) { return ExprPtr(); });
}

// The table: one entry per operation, each with its C++ form, its value
// and its derivative rule.
std::vector<ExprOp> make_table() {
  std::vector<ExprOp> t;
  // d(a + b) = da + db
  t.push_back(binary(
      "add",
      [](const Args& a) { return infix(a, "+"); },
      [](double a, double b) { return a + b; },
      [](const Expr&, const Ds& d) { return d_add(d[0], d[1]); }));
  // d(a − b) = da − db
  t.push_back(binary(
      "sub",
      [](const Args& a) { return infix(a, "-"); },
      [](double a, double b) { return a - b; },
      [](const Expr&, const Ds& d) { return d_sub(d[0], d[1]); }));
  // d(a·b) = da·b + a·db
  t.push_back(binary(
      "mul",
      [](const Args& a) { return infix(a, "*"); },
      [](double a, double b) { return a * b; },
      [](const Expr& e, const Ds& d) {
        return d_add(d_mul(arg(e, 1), d[0]), d_mul(arg(e, 0), d[1]));
      }));
  // d(a/b) = (da − y·db)/b
  t.push_back(binary(
      "div",
      [](const Args& a) { return infix(a, "/"); },
      [](double a, double b) { return a / b; },
      [](const Expr& e, const Ds& d) -> ExprPtr {
        ExprPtr num = d_sub(d[0], d_mul(self(e), d[1]));
        return num ? apply("div", {num, arg(e, 1)}) : nullptr;
      }));
  // d(a^b) = b·a^(b−1)·da + y·log(a)·db
  t.push_back(binary(
      "pow",
      [](const Args& a) { return call("__builtin_pow", a); },
      [](double a, double b) { return std::pow(a, b); },
      [](const Expr& e, const Ds& d) {
        ExprPtr b1 = apply("sub", {arg(e, 1), constant(1)});
        ExprPtr da = d_mul(
            apply("mul", {arg(e, 1), apply("pow", {arg(e, 0), b1})}), d[0]);
        ExprPtr db =
            d_mul(apply("mul", {self(e), apply("log", {arg(e, 0)})}), d[1]);
        return d_add(da, db);
      }));
  // min(a, b) = a where a <= b: d = da there, db elsewhere
  t.push_back(binary(
      "min",
      [](const Args& a) {
        return "(" + a[1] + " < " + a[0] + " ? " + a[1] + " : " + a[0] + ")";
      },
      [](double a, double b) { return b < a ? b : a; },
      [](const Expr& e, const Ds& d) -> ExprPtr {
        if (!d[0] && !d[1]) return nullptr;
        return apply("where",
                     {apply("le", {arg(e, 0), arg(e, 1)}),
                      d[0] ? d[0] : constant(0),
                      d[1] ? d[1] : constant(0)});
      }));
  // max(a, b) = a where a >= b: d = da there, db elsewhere
  t.push_back(binary(
      "max",
      [](const Args& a) {
        return "(" + a[0] + " < " + a[1] + " ? " + a[1] + " : " + a[0] + ")";
      },
      [](double a, double b) { return a < b ? b : a; },
      [](const Expr& e, const Ds& d) -> ExprPtr {
        if (!d[0] && !d[1]) return nullptr;
        return apply("where",
                     {apply("ge", {arg(e, 0), arg(e, 1)}),
                      d[0] ? d[0] : constant(0),
                      d[1] ? d[1] : constant(0)});
      }));
  // d(−a) = −da
  t.push_back(unary(
      "neg",
      [](const Args& a) { return "(-" + a[0] + ")"; },
      [](double a) { return -a; },
      [](const Expr&, const Ds& d) {
        return d[0] ? apply("neg", {d[0]}) : nullptr;
      }));
  // d exp(a) = y·da
  t.push_back(unary(
      "exp",
      [](const Args& a) { return call("__builtin_exp", a); },
      [](double a) { return std::exp(a); },
      [](const Expr& e, const Ds& d) { return d_mul(self(e), d[0]); }));
  // d log(a) = da/a
  t.push_back(unary(
      "log",
      [](const Args& a) { return call("__builtin_log", a); },
      [](double a) { return std::log(a); },
      [](const Expr& e, const Ds& d) {
        return d[0] ? apply("div", {d[0], arg(e, 0)}) : nullptr;
      }));
  // d sin(a) = cos(a)·da
  t.push_back(unary(
      "sin",
      [](const Args& a) { return call("__builtin_sin", a); },
      [](double a) { return std::sin(a); },
      [](const Expr& e, const Ds& d) {
        return d_mul(apply("cos", {arg(e, 0)}), d[0]);
      }));
  // d cos(a) = −sin(a)·da
  t.push_back(unary(
      "cos",
      [](const Args& a) { return call("__builtin_cos", a); },
      [](double a) { return std::cos(a); },
      [](const Expr& e, const Ds& d) {
        return d_mul(apply("neg", {apply("sin", {arg(e, 0)})}), d[0]);
      }));
  // d tanh(a) = (1 − y²)·da
  t.push_back(unary(
      "tanh",
      [](const Args& a) { return call("__builtin_tanh", a); },
      [](double a) { return std::tanh(a); },
      [](const Expr& e, const Ds& d) {
        return d_mul(
            apply("sub", {constant(1), apply("mul", {self(e), self(e)})}),
            d[0]);
      }));
  // d|a| = sign(a)·da (0 at a = 0)
  t.push_back(unary(
      "abs",
      [](const Args& a) { return call("__builtin_fabs", a); },
      [](double a) { return std::fabs(a); },
      [](const Expr& e, const Ds& d) {
        ExprPtr sign = apply("sub",
                             {apply("gt", {arg(e, 0), constant(0)}),
                              apply("lt", {arg(e, 0), constant(0)})});
        return d_mul(sign, d[0]);
      }));
  // d sqrt(a) = da/(2y)
  t.push_back(unary(
      "sqrt",
      [](const Args& a) { return call("__builtin_sqrt", a); },
      [](double a) { return std::sqrt(a); },
      [](const Expr& e, const Ds& d) {
        return d[0] ? apply("div", {d[0], apply("mul", {constant(2), self(e)})})
                    : nullptr;
      }));
  // Comparisons are piecewise constant: derivative 0.
  t.push_back(comparison("lt", "<", [](double a, double b) { return a < b; }));
  t.push_back(
      comparison("le", "<=", [](double a, double b) { return a <= b; }));
  t.push_back(comparison("gt", ">", [](double a, double b) { return a > b; }));
  t.push_back(
      comparison("ge", ">=", [](double a, double b) { return a >= b; }));
  t.push_back(
      comparison("eq", "==", [](double a, double b) { return a == b; }));
  t.push_back(
      comparison("ne", "!=", [](double a, double b) { return a != b; }));
  // d where(c, a, b) = where(c, da, db)
  t.push_back(
      {"where",
       3,
       [](const Args& a) {
         return "(" + a[0] + " != 0.0 ? " + a[1] + " : " + a[2] + ")";
       },
       [](const Vals& v) { return v[0] != 0.0 ? v[1] : v[2]; },
       [](const Expr& e, const Ds& d) -> ExprPtr {
         if (!d[1] && !d[2]) return nullptr;
         return apply(
             "where",
             {arg(e, 0), d[1] ? d[1] : constant(0), d[2] ? d[2] : constant(0)});
       }});
  return t;
}

Offset padded(const Offset& o, int ndim) {
  Offset p = o;
  p.resize(ndim, 0);
  return p;
}

}  // namespace

const std::vector<ExprOp>& expr_ops() {
  static const std::vector<ExprOp> table = make_table();
  return table;
}

const ExprOp* find_expr_op(const std::string& name) {
  for (const ExprOp& op : expr_ops())
    if (op.name == name) return &op;
  return nullptr;
}

ExprPtr constant(double v) {
  auto e = std::make_shared<Expr>();
  e->op = "const";
  e->value = v;
  return e;
}

ExprPtr read(int input, Offset offset) {
  auto e = std::make_shared<Expr>();
  e->op = "in";
  e->input = input;
  bool zero = true;
  for (int64_t o : offset) zero = zero && o == 0;
  if (!zero) e->offset = std::move(offset);
  return e;
}

ExprPtr inside(Offset offset) {
  auto e = std::make_shared<Expr>();
  e->op = "inside";
  e->offset = std::move(offset);
  return e;
}

bool is_const(const ExprPtr& e, double v) {
  return e->op == "const" && e->value == v &&
         std::signbit(e->value) == std::signbit(v);
}

namespace {

// Exact simplifications only: each returns the same value as the
// operation for every finite input (x·0 → 0 drops NaN and infinity, which
// a derivative's zero factor may do).
ExprPtr simplified(const std::string& op, const std::vector<ExprPtr>& a) {
  const auto zero = [](const ExprPtr& e) {
    return e->op == "const" && e->value == 0.0;
  };
  if (op == "add" && zero(a[0])) return a[1];
  if ((op == "add" || op == "sub") && zero(a[1])) return a[0];
  if (op == "sub" && zero(a[0])) return apply("neg", {a[1]});
  if (op == "mul" && (zero(a[0]) || zero(a[1]))) return constant(0);
  if (op == "mul" && is_const(a[0], 1)) return a[1];
  if ((op == "mul" || op == "div") && is_const(a[1], 1)) return a[0];
  if (op == "mul" && is_const(a[0], -1)) return apply("neg", {a[1]});
  if (op == "neg" && a[0]->op == "neg") return a[0]->args[0];
  if (op == "where" && a[0]->op == "const")
    return a[0]->value != 0.0 ? a[1] : a[2];
  return nullptr;
}

}  // namespace

ExprPtr apply(const std::string& op, std::vector<ExprPtr> args) {
  const ExprOp* def = find_expr_op(op);
  if (def == nullptr)
    throw OptionsError("stencil: unknown operation \"" + op + "\"");
  if (static_cast<int>(args.size()) != def->arity) {
    throw OptionsError("stencil: " + op + " takes " +
                       std::to_string(def->arity) + " arguments, got " +
                       std::to_string(args.size()));
  }
  bool all_const = true;
  for (const ExprPtr& a : args) all_const = all_const && a->op == "const";
  if (all_const) {
    Vals v;
    for (const ExprPtr& a : args) v.push_back(a->value);
    return constant(def->eval(v));
  }
  if (ExprPtr s = simplified(op, args)) return s;
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->args = std::move(args);
  return e;
}

namespace {

std::string offset_text(const Offset& o) {
  std::string s = "[";
  for (std::size_t k = 0; k < o.size(); ++k) {
    if (k) s += ',';
    s += std::to_string(o[k]);
  }
  return s + "]";
}

}  // namespace

namespace {

// How many times each operation node is an argument (leaves not counted).
void count_uses(const ExprPtr& e, std::map<const Expr*, int>& uses) {
  for (const ExprPtr& a : e->args) {
    if (a->args.empty()) continue;
    if (uses[a.get()]++ == 0) count_uses(a, uses);
  }
}

// Appends e's text: a node used more than once is written in full the
// first time, labelled ($k=…, labels numbered in the order they appear),
// and as $k after.
void print_into(const ExprPtr& e,
                const std::map<const Expr*, int>& uses,
                std::map<const Expr*, int>& labels,
                std::string& s) {
  if (e->op == "const") {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", e->value);
    s += buf;
    return;
  }
  if (e->op == "in") {
    s += "in";
    s += std::to_string(e->input);
    if (!e->offset.empty()) s += offset_text(e->offset);
    return;
  }
  if (e->op == "inside") {
    s += "inside";
    s += offset_text(e->offset);
    return;
  }
  const auto used = uses.find(e.get());
  if (used != uses.end() && used->second > 1) {
    const auto [it, first] =
        labels.emplace(e.get(), static_cast<int>(labels.size()));
    s += '$';
    s += std::to_string(it->second);
    if (!first) return;
    s += '=';
  }
  s += e->op;
  s += '(';
  for (std::size_t k = 0; k < e->args.size(); ++k) {
    if (k) s += ',';
    print_into(e->args[k], uses, labels, s);
  }
  s += ')';
}

}  // namespace

std::string print(const ExprPtr& e) {
  std::map<const Expr*, int> uses, labels;
  count_uses(e, uses);
  std::string s;
  print_into(e, uses, labels, s);
  return s;
}

namespace {

class Parser {
 public:
  // Reads text[begin, end); messages give positions in the whole text.
  Parser(const std::string& text, std::size_t begin, std::size_t end)
      : s_(text.substr(begin, end == std::string::npos ? end : end - begin)),
        whole_(text),
        base_(begin) {}

  ExprPtr whole() {
    ExprPtr e = expr();
    skip();
    if (pos_ != s_.size()) fail("unexpected text");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw OptionsError("stencil expression: " + what + " at character " +
                       std::to_string(base_ + pos_) + " of \"" + whole_ + "\"");
  }
  void skip() {
    while (pos_ < s_.size() &&
           std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  bool take(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::string name() {
    skip();
    std::size_t start = pos_;
    while (
        pos_ < s_.size() &&
        (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    return s_.substr(start, pos_ - start);
  }
  Offset offset() {
    Offset o;
    if (!take('[')) fail("expected '['");
    if (take(']')) return o;
    do {
      skip();
      char* end = nullptr;
      const long long v = std::strtoll(s_.c_str() + pos_, &end, 10);
      if (end == s_.c_str() + pos_) fail("expected an integer offset");
      pos_ = static_cast<std::size_t>(end - s_.c_str());
      o.push_back(v);
    } while (take(','));
    if (!take(']')) fail("expected ']'");
    return o;
  }
  ExprPtr number() {
    char* end = nullptr;
    const double v = std::strtod(s_.c_str() + pos_, &end);
    if (end == s_.c_str() + pos_) fail("expected a number");
    if (!std::isfinite(v)) {
      fail("the number " +
           s_.substr(pos_, static_cast<std::size_t>(end - s_.c_str()) - pos_) +
           " is not a finite double");
    }
    pos_ = static_cast<std::size_t>(end - s_.c_str());
    return constant(v);
  }
  ExprPtr expr() {
    skip();
    if (pos_ >= s_.size()) fail("expected an expression");
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' ||
        c == '.')
      return number();
    if (c == '$') return labelled();
    const std::size_t start = pos_;
    const std::string id = name();
    if (id.empty()) fail("expected an expression");
    if (id == "inf" || id == "nan") {
      pos_ = start;
      return number();
    }
    if (id == "inside") return inside(offset());
    if (id.size() > 2 && id.compare(0, 2, "in") == 0 &&
        id.find_first_not_of("0123456789", 2) == std::string::npos) {
      const int k = std::stoi(id.substr(2));
      skip();
      return read(k, pos_ < s_.size() && s_[pos_] == '[' ? offset() : Offset{});
    }
    if (find_expr_op(id) == nullptr) {
      pos_ = start;
      fail("unknown operation \"" + id + "\"");
    }
    std::vector<ExprPtr> args;
    if (!take('(')) fail("expected '(' after " + id);
    do args.push_back(expr());
    while (take(','));
    if (!take(')')) fail("expected ')'");
    auto e = std::make_shared<Expr>();
    if (static_cast<int>(args.size()) != find_expr_op(id)->arity)
      fail(id + " takes " + std::to_string(find_expr_op(id)->arity) +
           " arguments");
    e->op = id;
    e->args = std::move(args);
    return e;
  }

  // $k=<expr> defines label k (labels come in order: $0, $1, …); $k
  // alone is the expression it labels.
  ExprPtr labelled() {
    ++pos_;  // '$'
    const std::size_t start = pos_;
    while (pos_ < s_.size() &&
           std::isdigit(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
    if (start == pos_) fail("expected a label number after '$'");
    const std::string digits = s_.substr(start, pos_ - start);
    if (digits.size() > 9) fail("label $" + digits + " is too large");
    const std::size_t k = std::stoul(digits);
    if (take('=')) {
      if (k != labels_.size())
        fail("label $" + digits + " defined where $" +
             std::to_string(labels_.size()) + " comes next");
      labels_.push_back(nullptr);  // not usable inside its own definition
      ExprPtr e = expr();
      labels_[k] = e;
      return e;
    }
    if (k >= labels_.size() || labels_[k] == nullptr)
      fail("label $" + digits + " used before it is defined");
    return labels_[k];
  }

  const std::string s_;       // the part read
  const std::string& whole_;  // the text it is part of
  std::size_t base_;          // where s_ starts in whole_
  std::size_t pos_ = 0;
  std::vector<ExprPtr> labels_;
};

// Both walks go once through each distinct node of the DAG, not through
// the tree it stands for: a subexpression shared k times (a time step
// written as a recurrence) is rebuilt or visited once, and a rebuilt
// expression shares its parts as the original does. A part the rebuild
// leaves as it was is the original node itself, so parts shared between
// expressions rebuilt one by one (the arguments of one operation, each
// renumbered) stay shared.
ExprPtr rebuilt(const ExprPtr& e,
                const std::function<ExprPtr(const Expr&)>& leaf,
                std::map<const Expr*, ExprPtr>& done) {
  if (e->op == "const") return e;
  if (e->op == "in" || e->op == "inside") {
    ExprPtr r = leaf(*e);
    const bool same =
        r->op == e->op && r->input == e->input && r->offset == e->offset;
    return same ? e : r;
  }
  auto it = done.find(e.get());
  if (it != done.end()) return it->second;
  std::vector<ExprPtr> args;
  bool changed = false;
  for (const ExprPtr& a : e->args) {
    args.push_back(rebuilt(a, leaf, done));
    changed = changed || args.back() != a;
  }
  ExprPtr out = e;
  if (changed) {
    auto copy = std::make_shared<Expr>(*e);
    copy->args = std::move(args);
    out = copy;
  }
  done.emplace(e.get(), out);
  return out;
}

ExprPtr rebuilt(const ExprPtr& e,
                const std::function<ExprPtr(const Expr&)>& leaf) {
  std::map<const Expr*, ExprPtr> done;
  return rebuilt(e, leaf, done);
}

void visit(const ExprPtr& e,
           const std::function<void(const Expr&)>& f,
           std::set<const Expr*>& seen) {
  if (!seen.insert(e.get()).second) return;
  f(*e);
  for (const ExprPtr& a : e->args) visit(a, f, seen);
}

void visit(const ExprPtr& e, const std::function<void(const Expr&)>& f) {
  std::set<const Expr*> seen;
  visit(e, f, seen);
}

}  // namespace

ExprPtr parse(const std::string& text, std::size_t begin, std::size_t end) {
  return Parser(text, begin, end).whole();
}

ExprPtr shifted(const ExprPtr& e,
                const Offset& by,
                int ndim,
                const std::vector<bool>* fixed) {
  return rebuilt(e, [&](const Expr& leaf) {
    if (leaf.op == "in" && fixed != nullptr && (*fixed)[leaf.input])
      return std::make_shared<const Expr>(leaf);
    Offset o = padded(leaf.offset, ndim);
    for (int a = 0; a < ndim; ++a)
      o[a] += a < static_cast<int>(by.size()) ? by[a] : 0;
    return leaf.op == "in" ? read(leaf.input, o) : inside(o);
  });
}

ExprPtr renumbered(const ExprPtr& e, const std::vector<int>& to) {
  return rebuilt(e, [&](const Expr& leaf) {
    if (leaf.op == "inside") return std::make_shared<const Expr>(leaf);
    return read(to[leaf.input], leaf.offset);
  });
}

std::vector<ReadKey> reads_of(const ExprPtr& e, int ndim) {
  std::map<ReadKey, int> seen;
  visit(e, [&](const Expr& x) {
    if (x.op == "in") seen[ReadKey{x.input, padded(x.offset, ndim)}] = 0;
  });
  std::vector<ReadKey> out;
  for (const auto& kv : seen) out.push_back(kv.first);
  return out;
}

int longest_offset(const ExprPtr& e) {
  std::size_t n = 0;
  visit(e, [&](const Expr& x) { n = std::max(n, x.offset.size()); });
  return static_cast<int>(n);
}

std::vector<Offset> insides_of(const ExprPtr& e, int ndim) {
  std::map<Offset, int> seen;
  visit(e, [&](const Expr& x) {
    if (x.op == "inside") seen[padded(x.offset, ndim)] = 0;
  });
  std::vector<Offset> out;
  for (const auto& kv : seen) out.push_back(kv.first);
  return out;
}

ExprPtr derivative(const ExprPtr& e,
                   const std::function<ExprPtr(const ReadKey&)>& seed,
                   int ndim) {
  std::map<const Expr*, ExprPtr> memo;
  std::function<ExprPtr(const ExprPtr&)> d = [&](const ExprPtr& x) -> ExprPtr {
    if (x->op == "const" || x->op == "inside") return nullptr;
    if (x->op == "in") return seed(ReadKey{x->input, padded(x->offset, ndim)});
    auto it = memo.find(x.get());
    if (it != memo.end()) return it->second;
    Ds ds;
    bool any = false;
    for (const ExprPtr& a : x->args) {
      ds.push_back(d(a));
      any = any || ds.back() != nullptr;
    }
    ExprPtr r = any ? find_expr_op(x->op)->derivative(*x, ds) : nullptr;
    memo[x.get()] = r;
    return r;
  };
  return d(e);
}

double evaluate(const ExprPtr& e,
                const std::function<double(const ReadKey&)>& value_of,
                const std::function<bool(const Offset&)>& inside_of,
                int ndim) {
  if (e->op == "const") return e->value;
  if (e->op == "in")
    return value_of(ReadKey{e->input, padded(e->offset, ndim)});
  if (e->op == "inside") return inside_of(padded(e->offset, ndim)) ? 1.0 : 0.0;
  Vals v;
  for (const ExprPtr& a : e->args)
    v.push_back(evaluate(a, value_of, inside_of, ndim));
  return find_expr_op(e->op)->eval(v);
}

}  // namespace adgraph::grid
