#pragma once

namespace edgeprobe::report::html_assets {

// src/report/html/report.{css,js}, compiled in by CMake (html/assets.cpp.in).
extern const char kStyle[];
extern const char kScript[];

}  // namespace edgeprobe::report::html_assets
