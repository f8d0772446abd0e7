//===- LaunchSchedule.cpp - Host-side order of one execute call's launches --------------===//
//
// See LaunchSchedule.h.
//
//===------------------------------------------------------------------------------------===//
#include "LaunchSchedule.h"

namespace msccl::cuda::detail {

std::vector<ScheduleStep> launchSchedule(uint32_t numGpus, uint32_t count, bool afterEarlierLaunch) {
  std::vector<ScheduleStep> out;
  using K = ScheduleStep::Kind;
  for (uint32_t it = 0; it < count; ++it) {
    if (numGpus > 1 && (it > 0 || afterEarlierLaunch))
      for (uint32_t g = 0; g < numGpus; ++g)
        for (uint32_t o = 0; o < numGpus; ++o)
          if (o != g) out.push_back({K::Wait, g, o, it});
    for (uint32_t g = 0; g < numGpus; ++g) {
      out.push_back({K::Launch, g, 0, it});
      if (numGpus > 1) out.push_back({K::Record, g, 0, it});
    }
  }
  return out;
}

uint64_t coResidentBlockLimit(int blocksPerSm, int numSms, bool reserveForProxy) {
  if (blocksPerSm <= 0 || numSms <= 0) return 0;
  const uint64_t sms = uint64_t(numSms) - (reserveForProxy && numSms > 1 ? 1 : 0);
  return uint64_t(blocksPerSm) * sms;
}

} // namespace msccl::cuda::detail
