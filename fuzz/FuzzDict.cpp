//===- FuzzDict.cpp - Writes the libFuzzer dictionaries at build time -------------------===//
//
//   msccl-fuzz-dict source OUT.dict GRAMMAR.g4...  the literal tokens of the lexer grammar
//       (keywords, operators, punctuation) and every builtin name of elab/Builtins.def
//       (functions, classes, methods, parameters, attributes, enums and members, options);
//   msccl-fuzz-dict plan OUT.dict PLAN.json...      every spelling of plan/PlanEnums.def (op
//       names, buffer, channel and reduce-op types) and every object key of the given plans.
// Nothing is listed by hand: the dictionaries follow the grammar, the builtin table, the op
// table and the plan format. Output is libFuzzer's dictionary format, one "token" per line.
//
//===------------------------------------------------------------------------------------===//
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

namespace {

std::set<std::string> words;

void add(const std::string &w) {
  if (!w.empty())
    words.insert(w);
}

/// Literals 'x' of the non-fragment lexer rules (ANTLR escapes \n \r \t \\ \' decoded).
void grammarLiterals(const std::string &file) {
  std::ifstream in(file);
  if (!in) {
    std::cerr << "msccl-fuzz-dict: cannot read " << file << "\n";
    std::exit(1);
  }
  std::string line;
  while (std::getline(in, line)) {
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line.compare(start, 2, "//") == 0 || line.compare(start, 8, "fragment") == 0)
      continue;
    if (line.find(':') == std::string::npos && line[start] != '|')
      continue;
    for (size_t i = line.find('\''); i != std::string::npos; i = line.find('\'', i + 1)) {
      std::string lit;
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '\''; ++j) {
        if (line[j] == '\\' && j + 1 < line.size()) {
          char e = line[++j];
          lit += e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e;
        } else {
          lit += line[j];
        }
      }
      if (j >= line.size())
        break;
      add(lit);
      i = j;
    }
  }
}

void builtinNames() {
#define MSCCL_BUILTIN_FUNCTION(Name, MinArgs, MaxArgs, Summary) add(#Name);
#define MSCCL_BUILTIN_CLASS(Name, Summary) add(#Name);
#define MSCCL_BUILTIN_TYPE(Name, Summary) add(#Name);
#define MSCCL_BUILTIN_CTOR_PARAM(Class, Param, Type, Default) add(#Param);
#define MSCCL_BUILTIN_METHOD(Class, Method, Returns, Summary) add(#Method);
#define MSCCL_BUILTIN_METHOD_PARAM(Class, Method, Param, Type, Default) add(#Param);
#define MSCCL_BUILTIN_ATTR(Class, Attr, Type, Summary) add(#Attr);
#define MSCCL_BUILTIN_ENUM(Name, Summary) add(#Name);
#define MSCCL_BUILTIN_ENUM_MEMBER(Enum, Member, Value) add(#Enum "." #Member);
#define MSCCL_BUILTIN_PROGRAM_OPTION(Name, Type, Default, Summary) add(#Name);
#include "msccl/elab/Builtins.def"
}

void planSpellings() {
#define MSCCL_OP(Enum, Json, ...) add("\"" Json "\"");
#define MSCCL_BUFFER_TYPE(Enum, Json, Value) add("\"" Json "\"");
#define MSCCL_CHANNEL_TYPE(Enum, Json) add("\"" Json "\"");
#define MSCCL_REDUCE_OP(Enum, Json) add("\"" Json "\"");
#include "msccl/plan/PlanEnums.def"
}

void jsonKeys(const nlohmann::json &j) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      add("\"" + it.key() + "\":");
      jsonKeys(it.value());
    }
  } else if (j.is_array()) {
    for (const auto &e : j)
      jsonKeys(e);
  }
}

std::string quote(const std::string &w) {
  std::string out = "\"";
  for (unsigned char c : w) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3 || (std::string(argv[1]) != "source" && std::string(argv[1]) != "plan")) {
    std::cerr << "usage: msccl-fuzz-dict source|plan OUT.dict INPUT...\n";
    return 2;
  }
  bool source = std::string(argv[1]) == "source";
  if (source) {
    for (int i = 3; i < argc; ++i)
      grammarLiterals(argv[i]);
    builtinNames();
  } else {
    planSpellings();
    for (int i = 3; i < argc; ++i) {
      std::ifstream in(argv[i]);
      std::stringstream ss;
      ss << in.rdbuf();
      nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
      if (j.is_discarded()) {
        std::cerr << "msccl-fuzz-dict: " << argv[i] << " is not JSON\n";
        return 1;
      }
      jsonKeys(j);
    }
    for (const char *lit : {"{", "}", "[", "]", ",", "true", "false", "null"})
      add(lit);
  }
  std::ofstream out(argv[2]);
  for (const auto &w : words)
    out << quote(w) << "\n";
  return out ? 0 : 1;
}
