#include "app/job.h"

#include <fmt/format.h>

#include "store/store.h"
#include "workload/sweep.h"

namespace edgeprobe::app {

std::string finished_error(store::Status status, const JobOutcome& outcome, size_t failed, size_t units,
                           const std::string& unit) {
  if (outcome.interrupted) return "interrupted";
  const std::string first = outcome.errors.empty() ? "" : "; the first: " + outcome.errors.front();
  switch (status) {
    case store::Status::kPartial: return fmt::format("{} of {} {} failed{}", failed, units, unit, first);
    case store::Status::kFailed: return fmt::format("all {} {} failed{}", units, unit, first);
    default: return "";
  }
}

void warn_oversubscription(const std::vector<int>& thread_counts, const JobContext& ctx) {
  const std::string warning = workload::oversubscription_warning(thread_counts, workload::usable_cpu_count());
  if (!warning.empty() && ctx.sink) ctx.sink->warning(warning);
}

}  // namespace edgeprobe::app
