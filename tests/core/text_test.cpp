#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/text.h"
#include "support/run_process.h"

using namespace edgeprobe;

TEST(CsvField, PlainFieldsStayBare) {
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("pp128"), "pp128");
  EXPECT_EQ(csv_field("12.5 t/s; it's"), "12.5 t/s; it's");
}

TEST(CsvField, CommaQuoteAndLineBreaksAreQuoted) {
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("\""), "\"\"\"\"");
  EXPECT_EQ(csv_field("line\nbreak"), "\"line\nbreak\"");
  // A bare CR would end the record for RFC 4180 readers just as LF does.
  EXPECT_EQ(csv_field("carriage\rreturn"), "\"carriage\rreturn\"");
  EXPECT_EQ(csv_field("a, \"quoted\" note\r\n"), "\"a, \"\"quoted\"\" note\r\n\"");
}

TEST(ShellQuote, SafeWordsStayBareEverythingElseIsSingleQuoted) {
  EXPECT_EQ(shell_quote("edgeprobe"), "edgeprobe");
  EXPECT_EQ(shell_quote("-C"), "-C");
  EXPECT_EQ(shell_quote("/a/b-c_d.gguf"), "/a/b-c_d.gguf");
  EXPECT_EQ(shell_quote("user@host:50%,x+y=z"), "user@host:50%,x+y=z");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("~"), "'~'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("'"), "''\\'''");
  EXPECT_EQ(shell_quote("naïve"), "'naïve'");
}

TEST(ShellJoin, WordsAreJoinedBySpaces) {
  EXPECT_EQ(shell_join({}), "");
  EXPECT_EQ(shell_join({"edgeprobe", "-m", "/a b/it's.gguf"}), "edgeprobe -m '/a b/it'\\''s.gguf'");
  EXPECT_EQ(shell_join({"x", ""}), "x ''");
}

// The property that matters: a real POSIX shell given the joined line hands the command
// back exactly the words that went in.
TEST(ShellJoin, RoundTripsThroughARealShell) {
  const std::vector<std::string> words = {
      "plain",      "it's",        "a b",         "$(rm -rf x)", "`rm -rf x`", "\"",        "\\",
      "back\\slash", "",            "two\nlines",  "tab\there",   "naïve 東京", "\xff\xfe", "*",
      "~",          "#not-a-comment", "a;b&&c|d",  "!event",      "'",          "''",       "${x:-y}",
      "-n",         "50%",         "--output=x.gguf", "trailing\\"};
  const std::string line = "printf '%s\\0' " + shell_join(words);
  const auto r = test_support::run_process({"/bin/sh", "-c", line}, 30);
  ASSERT_EQ(r.exit_code, 0) << line << "\n" << r.err;
  std::vector<std::string> back;
  size_t start = 0;
  for (size_t nul = r.out.find('\0'); nul != std::string::npos; nul = r.out.find('\0', start)) {
    back.push_back(r.out.substr(start, nul - start));
    start = nul + 1;
  }
  EXPECT_EQ(start, r.out.size()) << "output after the last NUL: " << r.out.substr(start);
  ASSERT_EQ(back.size(), words.size()) << line;
  for (size_t i = 0; i < words.size(); ++i) EXPECT_EQ(back[i], words[i]) << "word " << i << " in: " << line;
}

// A peer's refusal or a server's name reaches the terminal as one line with no control code.
TEST(OneLine, ControlsAreEscapedAndLongTextIsCutAtACharacter) {
  EXPECT_EQ(one_line("refused"), "refused");
  EXPECT_EQ(one_line("two\nlines\r\tand \x1b[2Jclear"), "two\\nlines\\r\\tand \\x1b[2Jclear");
  EXPECT_EQ(one_line("csi \xc2\x9b" "31m"), "csi \\u009b31m");  // the C1 control introducer
  EXPECT_EQ(one_line("模型 ok"), "模型 ok");                          // text beyond ASCII stays
  const std::string huge(900000, 'x');
  EXPECT_EQ(one_line(huge, 10), "xxxxxxxxxx… (900000 bytes)");
  // Cut inside a 3-byte character: the partial character is dropped, not left dangling.
  EXPECT_EQ(one_line("ab模型", 4), "ab… (8 bytes)");
}

// Bytes that are not well-formed UTF-8 (a server's, a device's) are escaped too, so the
// line is valid UTF-8 wherever it goes (a JSON result, a terminal).
TEST(OneLine, BytesThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(one_line("ok \xff\xfe end"), "ok \\xff\\xfe end");                 // never UTF-8
  EXPECT_EQ(one_line("\xc0\x80 \xed\xa0\x80"), "\\xc0\\x80 \\xed\\xa0\\x80");  // overlong NUL, a surrogate
  EXPECT_EQ(one_line("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");             // past U+10FFFF
  EXPECT_EQ(one_line("a\xe6\xa8"), "a\\xe6\\xa8");                             // a character cut short
  EXPECT_EQ(one_line("\x80 模 \xf0\x9f\x98\x80"), "\\x80 模 \xf0\x9f\x98\x80");  // a stray continuation; 4-byte kept
  // An escape is never cut in half by the bound.
  EXPECT_EQ(one_line("ab\x1b", 4), "ab… (3 bytes)");
}
