// The hub in a real browser: Debian's headless Chromium loads its pages from a hub on
// loopback, as a person would follow them (the runs filtered, a run, a leaderboard, a
// compare), with the hub's Content-Security-Policy in force. Each page must render with
// no console message (a blocked script or style is one) and, for report pages, the page's
// own counters must say it rendered without a script error.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "support/run_process.h"

using namespace edgeprobe;
namespace fs = std::filesystem;

namespace {

const char kChromium[] = "/usr/bin/chromium";

struct Loaded {
  std::string dom, log;
};

Loaded load(const std::string& url, const std::string& screenshot) {
  test_support::TempDir profile;
  std::vector<std::string> args = {kChromium,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--no-first-run",
                                   "--user-data-dir=" + profile.path(),
                                   "--enable-logging=stderr",
                                   "--v=0"};
  auto dump = args;
  dump.insert(dump.end(), {"--dump-dom", url});
  const auto dumped = test_support::run_process(dump, 120);
  EXPECT_EQ(dumped.exit_code, 0) << dumped.err;
  std::string log = dumped.err;
  if (!screenshot.empty()) {
    const fs::path dir = fs::path(EDGEPROBE_BUILD_DIR) / "tests" / "hub" / "pages";
    fs::create_directories(dir);
    args.insert(args.end(),
                {"--screenshot=" + (dir / (screenshot + ".png")).string(), "--window-size=1400,1000", url});
    log += test_support::run_process(args, 120).err;
  }
  return {dumped.out, log};
}

std::string body_attr(const std::string& dom, const std::string& attr) {
  std::smatch m;
  if (!std::regex_search(dom, m, std::regex("<body[^>]*\\s" + attr + "=\"([^\"]*)\""))) return "";
  return m[1];
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(HubBrowser, RunsFilterRunLeaderboardAndCompareRenderWithoutAConsoleMessage) {
  if (!fs::exists(kChromium))
    GTEST_SKIP() << kChromium << " is absent: apt-get install chromium (scripts/setup.sh does)";
  test_support::TempDir dir;
  const std::string db = dir.file("hub.db");
  for (int i = 0; i < 2; ++i) {
    const auto r = test_support::run_edgeprobe(
        {"bench", "-m", test_support::tiny_model(), "-p", "16", "-n", "8", "-r", "2", "--db", db, "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  test_support::BackgroundProcess hub(
      {EDGEPROBE_BINARY, "serve", "--db", db, "--listen", "127.0.0.1:0", "--port-file", dir.file("port")},
      dir.file("stderr"));
  for (int i = 0; i < 300 && !fs::exists(dir.file("port")); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(fs::exists(dir.file("port"))) << test_support::read_file(dir.file("stderr"));
  const std::string url =
      "http://127.0.0.1:" + std::to_string(std::stoi(test_support::read_file(dir.file("port"))));

  // The runs, filtered by a model name in the URL: both runs, linked.
  const Loaded runs = load(url + "/runs?model=synth&sort=decode&order=desc", "runs");
  EXPECT_EQ(count(runs.dom, "<tr data-run="), 2u) << runs.dom.substr(0, 2000);
  EXPECT_NE(runs.dom.find("value=\"synth\""), std::string::npos);  // the form shows the filter
  EXPECT_NE(runs.dom.find("href=\"/runs/1\""), std::string::npos);
  const Loaded none = load(url + "/runs?model=no-such-model", "");
  EXPECT_EQ(count(none.dom, "<tr data-run="), 0u);

  // A run: report's page, its script run under the hub's policy.
  const Loaded run = load(url + "/runs/1", "run");
  EXPECT_EQ(body_attr(run.dom, "data-render"), "done") << run.log;
  EXPECT_EQ(body_attr(run.dom, "data-errors"), "");
  EXPECT_NE(run.dom.find("href=\"/leaderboards\""), std::string::npos);  // the hub's navigation

  const Loaded boards = load(url + "/leaderboards", "");
  std::smatch link;
  ASSERT_TRUE(std::regex_search(boards.dom, link, std::regex("href=\"(/leaderboard\\?[^\"]+)\"")))
      << boards.dom;
  const std::string board_path = std::regex_replace(link[1].str(), std::regex("&amp;"), "&");
  const Loaded board = load(url + board_path, "leaderboard");
  EXPECT_NE(board.dom.find("<table id=\"decode\">"), std::string::npos);
  EXPECT_NE(board.dom.find("<td>1</td>"), std::string::npos) << board.dom;  // a first place

  const Loaded compare = load(url + "/compare?a=1&b=2", "compare");
  EXPECT_EQ(body_attr(compare.dom, "data-render"), "done") << compare.log;
  EXPECT_NE(compare.dom.find("id=\"hub-compare\""), std::string::npos);
  EXPECT_NE(compare.dom.find("explain"), std::string::npos);

  // The device pages, linked from the run's header and the runs list.
  std::smatch device_link;
  ASSERT_TRUE(std::regex_search(run.dom, device_link, std::regex("href=\"(/device\\?id=[^\"]+)\"")));
  const std::string device_path = device_link[1].str();
  const Loaded devices = load(url + "/devices", "devices");
  EXPECT_NE(devices.dom.find("href=\"" + device_path + "\""), std::string::npos);
  const Loaded device = load(url + device_path, "device");
  EXPECT_NE(device.dom.find("<table id=\"device-runs\">"), std::string::npos);
  EXPECT_EQ(count(device.dom, "<tr data-run="), 2u);

  for (const Loaded* page : {&runs, &none, &run, &boards, &board, &compare, &devices, &device})
    EXPECT_EQ(page->log.find("CONSOLE"), std::string::npos) << page->log;

  // Keyboard navigation: Tab reaches every link and control of each hub page, the focused
  // one is outlined, and Enter on a link follows it.
  if (test_support::run_process({"sh", "-c", "command -v node"}, 10).exit_code != 0)
    GTEST_SKIP() << "node is absent: the keyboard check needs it (apt-get install nodejs)";
  for (const std::string& path : {std::string("/runs?model=synth"), std::string("/devices"), device_path,
                                  board_path, std::string("/leaderboards")}) {
    const auto r = test_support::run_process(
        {"node", EDGEPROBE_KEYBOARD_NAV_JS, kChromium, url + path, "/devices"}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"unreached\":[]"), std::string::npos) << path << ": " << r.out;
    EXPECT_NE(r.out.find("\"focus_not_visible\":[]"), std::string::npos) << path << ": " << r.out;
    EXPECT_NE(r.out.find("\"after_enter\":\"/devices\""), std::string::npos) << path << ": " << r.out;
    EXPECT_EQ(r.out.find("\"interactive\":0,"), std::string::npos) << path << ": " << r.out;
  }
}
