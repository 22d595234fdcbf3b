#include "common/messages/task_fit.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::testing::HasSubstr;

v1::WorkerCapabilities Caps(uint32_t threads, uint32_t gpus, uint64_t memory_mb) {
  v1::WorkerCapabilities c;
  c.set_threads(threads);
  c.set_gpus(gpus);
  c.set_memory_mb(memory_mb);
  return c;
}

TEST(TaskFitTest, NeedsComeFromTheResourcesWithOneThreadAtLeast) {
  v1::Resources r;
  EXPECT_EQ(NeedsOf(r).threads, 1u);
  r.set_threads_per_task(3);
  r.set_gpus_per_task(1);
  r.set_memory_mb_per_task(512);
  const TaskNeeds needs = NeedsOf(r);
  EXPECT_EQ(needs.threads, 3u);
  EXPECT_EQ(needs.gpus, 1u);
  EXPECT_EQ(needs.memory_mb, 512u);
}

TEST(TaskFitTest, ATaskFitsWhatIsFree) {
  const v1::WorkerCapabilities total = Caps(4, 0, 8192);
  EXPECT_TRUE(Fits({2, 0, 4096}, total, Caps(2, 0, 4096)));
  EXPECT_FALSE(Fits({3, 0, 0}, total, Caps(2, 0, 8192)));
  EXPECT_FALSE(Fits({1, 0, 4097}, total, Caps(4, 0, 4096)));
  EXPECT_TRUE(Fits({1, 0, 0}, total, Caps(1, 0, 0)));  // memory unstated
}

TEST(TaskFitTest, GpuTasksAndCpuTasksNeverCross) {
  EXPECT_FALSE(Fits({1, 1, 0}, Caps(4, 0, 0), Caps(4, 0, 0)));
  EXPECT_FALSE(Fits({1, 0, 0}, Caps(4, 1, 0), Caps(4, 1, 0)));
  EXPECT_TRUE(Fits({1, 1, 0}, Caps(4, 1, 0), Caps(4, 1, 0)));
  EXPECT_FALSE(Fits({1, 1, 0}, Caps(4, 1, 0), Caps(4, 0, 0)));  // its GPU is busy
}

// resources.gpus_per_task: N > 1 trains data-parallel across N GPUs of one
// worker: never split across workers, never on fewer.
TEST(TaskFitTest, AMultiGpuTaskNeedsThatManyFreeGpusOfOneWorker) {
  EXPECT_TRUE(Fits({1, 2, 0}, Caps(4, 2, 0), Caps(4, 2, 0)));
  EXPECT_FALSE(Fits({1, 2, 0}, Caps(4, 2, 0), Caps(4, 1, 0)));  // one of its two busy
  EXPECT_FALSE(Fits({1, 2, 0}, Caps(4, 1, 0), Caps(4, 1, 0)));  // a one-GPU worker
  EXPECT_TRUE(Fits({1, 2, 0}, Caps(8, 8, 0), Caps(1, 3, 0)));
}

TEST(TaskFitTest, ACpuTaskGoesToAWorkerOfItsNumericClassOnly) {
  v1::Resources r;
  EXPECT_EQ(NeedsOf(r).numeric_class, "portable");  // the default
  r.set_numerics("native");
  EXPECT_EQ(NeedsOf(r).numeric_class, "native");  // not pinned yet: any native class
  r.set_numeric_class("native/GenuineIntel-6-143");
  EXPECT_EQ(NeedsOf(r).numeric_class, "native/GenuineIntel-6-143");

  v1::WorkerCapabilities portable = Caps(4, 0, 0), older = Caps(4, 0, 0), intel = Caps(4, 0, 0),
                         amd = Caps(4, 0, 0), gpu = Caps(4, 1, 0);
  portable.set_numeric_class("portable");
  intel.set_numeric_class("native/GenuineIntel-6-143");
  amd.set_numeric_class("native/AuthenticAMD-26-2");
  const TaskNeeds p{1, 0, 0, "portable"}, any_native{1, 0, 0, "native"},
      pinned{1, 0, 0, "native/GenuineIntel-6-143"};
  EXPECT_TRUE(Fits(p, portable, portable));
  EXPECT_TRUE(Fits(p, older, older)) << "a worker that names no class is portable";
  EXPECT_FALSE(Fits(p, intel, intel));
  EXPECT_FALSE(Fits(any_native, portable, portable));
  EXPECT_TRUE(Fits(any_native, intel, intel));
  EXPECT_TRUE(Fits(any_native, amd, amd));
  EXPECT_TRUE(Fits(pinned, intel, intel));
  EXPECT_FALSE(Fits(pinned, amd, amd));
  // CUDA is a class of its own: the spec's numerics do not choose GPU workers.
  EXPECT_TRUE(Fits({1, 1, 0, "native/GenuineIntel-6-143"}, gpu, gpu));
}

// What an audit that waits is told: the requirement no worker meets.
TEST(TaskFitTest, NoWorkerFitsNamesTheRequirementNoWorkerMeets) {
  const v1::WorkerCapabilities cpu = Caps(4, 0, 8192), one_gpu = Caps(4, 1, 8192);
  EXPECT_EQ(NoWorkerFits({2, 0, 4096}, {one_gpu, cpu}), "") << "the CPU worker could";
  EXPECT_EQ(NoWorkerFits({1, 2, 0}, {cpu, one_gpu}),
            "the tasks need 2 GPUs each (resources.gpus_per_task); the most a worker offers is 1");
  EXPECT_EQ(NoWorkerFits({1, 1, 0}, {cpu}),
            "the tasks need 1 GPU each (resources.gpus_per_task); the most a worker offers is 0");
  EXPECT_EQ(NoWorkerFits({1, 0, 0}, {one_gpu}),
            "the tasks train on the CPU (resources.gpus_per_task 0); every worker is a GPU worker");
  EXPECT_EQ(NoWorkerFits({8, 0, 0}, {cpu, Caps(6, 0, 0)}),
            "the tasks need 8 threads each (resources.threads_per_task); the most a worker "
            "offers is 6");
  EXPECT_EQ(NoWorkerFits({1, 0, 9000}, {cpu}),
            "the tasks need 9000 MB each (resources.memory_mb_per_task); the most a worker "
            "offers is 8192");
  TaskNeeds native{1, 0, 0};
  native.numeric_class = kNativeNumerics;
  EXPECT_EQ(NoWorkerFits(native, {cpu}),
            "the tasks need a worker of numeric class native (resources.numerics); none has it");
}

TEST(TaskFitTest, ClaimsAreBoundedAndFreeIsWithinTotal) {
  EXPECT_EQ(CapabilityProblem(Caps(4, 1, 1024), Caps(2, 0, 512)), "");
  EXPECT_EQ(CapabilityProblem(Caps(0, 0, 0), Caps(0, 0, 0)), "");
  v1::WorkerCapabilities long_name = Caps(1, 0, 0);
  long_name.set_hostname(std::string(kMaxHostnameBytes + 1, 'h'));
  EXPECT_THAT(CapabilityProblem(long_name, Caps(1, 0, 0)), HasSubstr("capabilities.hostname"));
  EXPECT_THAT(CapabilityProblem(Caps(kMaxWorkerThreads + 1, 0, 0), Caps(1, 0, 0)),
              HasSubstr("capabilities.threads"));
  EXPECT_THAT(CapabilityProblem(Caps(4, kMaxWorkerGpus + 1, 0), Caps(1, 0, 0)),
              HasSubstr("capabilities.gpus"));
  EXPECT_THAT(CapabilityProblem(Caps(4, 0, kMaxWorkerMemoryMb + 1), Caps(1, 0, 0)),
              HasSubstr("capabilities.memory_mb"));
  v1::WorkerCapabilities odd_class = Caps(1, 0, 0);
  odd_class.set_numeric_class("native/<script>");
  EXPECT_THAT(CapabilityProblem(odd_class, Caps(1, 0, 0)), HasSubstr("capabilities.numeric_class"));
  EXPECT_THAT(CapabilityProblem(Caps(4, 0, 0), Caps(5, 0, 0)), HasSubstr("free.threads"));
  EXPECT_THAT(CapabilityProblem(Caps(4, 0, 100), Caps(4, 0, 101)), HasSubstr("free.memory_mb"));
}

TEST(TaskFitTest, ReservingNeverGoesBelowZero) {
  v1::WorkerCapabilities free = Caps(4, 1, 1000);
  Reserve({3, 1, 600}, &free);
  EXPECT_EQ(free.threads(), 1u);
  EXPECT_EQ(free.gpus(), 0u);
  EXPECT_EQ(free.memory_mb(), 400u);
  Reserve({3, 1, 600}, &free);
  EXPECT_EQ(free.threads(), 0u);
  EXPECT_EQ(free.memory_mb(), 0u);
}

}  // namespace
}  // namespace memaudit
