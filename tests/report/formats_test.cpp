// The formats each kind of output declares (report/formats.h) are the ones its writer
// renders: every declared format renders a real document, and anything else is refused by
// the writer with the same one line -o gives.
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "analysis/compare.h"
#include "core/error.h"
#include "report/compare_reporters.h"
#include "report/doctor_reporters.h"
#include "report/formats.h"
#include "report/reporter.h"
#include "report/session_reporters.h"
#include "report/fixtures.h"
#include "result/session.h"

using namespace edgeprobe;
using namespace edgeprobe::report;

namespace {

void expect_refused(const std::function<void()>& write, const std::string& format) {
  try {
    write();
    ADD_FAILURE() << "format '" << format << "' was rendered, not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown output format '" + format + "'"), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Formats, EveryFormatAResultDeclaresRendersAndOthersAreRefused) {
  const result::SessionReport session = result::session_report_from_json(report_test::session_document(1, 1, 2, 4));
  const result::DoctorResult doctor = result::doctor_result_from_json(report_test::doctor_document());
  for (const std::string& f : formats_of(OutputKind::kResults)) {
    std::ostringstream bench, s, d;
    EXPECT_NE(make_reporter(f, bench), nullptr) << f;
    write_session_report(session, f, s);
    EXPECT_FALSE(s.str().empty()) << f;
    write_doctor_report(doctor, f, d);
    EXPECT_FALSE(d.str().empty()) << f;
  }
  for (const std::string bad : {"yaml", "html", "lava"}) {
    std::ostringstream out;
    expect_refused([&] { make_reporter(bad, out); }, bad);
    expect_refused([&] { write_session_report(session, bad, out); }, bad);
    expect_refused([&] { write_doctor_report(doctor, bad, out); }, bad);
  }
}

TEST(Formats, EveryFormatACompareDeclaresRendersAndOthersAreRefused) {
  const nlohmann::json a = report_test::bench_document(3, 4, false), b = report_test::bench_document(3, 4, false);
  const analysis::CompareReport r = analysis::compare_documents(a, b);
  for (const std::string& f : formats_of(OutputKind::kCompare)) EXPECT_FALSE(compare_report(r, f, "A", "B").empty()) << f;
  expect_refused([&] { compare_report(r, "yaml", "A", "B"); }, "yaml");
}

TEST(Formats, AListReadsAsHelpAndErrorsSayIt) {
  EXPECT_EQ(format_list(formats_of(OutputKind::kResults)), "md, csv, json or jsonl");
  EXPECT_EQ(format_list(formats_of(OutputKind::kDeviceText)), "md or json");
  EXPECT_EQ(format_list(formats_of(OutputKind::kHtml)), "html");
}
