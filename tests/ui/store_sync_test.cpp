// The store thread's polling (ui/store_sync.h): a run's checkpoints are read again when its status changes
// (the sweep marking a dead writer's run interrupted writes no step), and a run that ended early offers the
// complete checkpoint folder its process renamed into place but was killed before recording (found by the
// Resume test on a slow machine: the window offered no Resume).
#include "ui/store_sync.h"

#include <gtest/gtest.h>

#include "model/model_files.h"  // TempDir, write_text

namespace ls::ui {
namespace {

namespace fs = std::filesystem;

// The checkpoint lists the poll pushed, by run.
std::map<int64_t, std::vector<store::Checkpoint>> polled_checkpoints(StoreSync& sync, Events& events) {
  sync.poll();
  std::map<int64_t, std::vector<store::Checkpoint>> out;
  for (auto& e : events.drain())
    if (auto* c = std::get_if<ev::RunCheckpoints>(&e)) out[c->run] = c->checkpoints;
  return out;
}

TEST(StoreSync, InterruptedRunOffersTheCheckpointItsFolderHolds) {
  test::TempDir dir;
  const fs::path out = dir / "run";
  fs::create_directories(out / "checkpoint-2");
  test::write_text(out / "checkpoint-2" / "trainer_state.json", R"({"step": 2, "data": {}})");
  fs::create_directories(out / "checkpoint-4.partial.99999999");  // cut off mid-write: not a checkpoint
  int64_t id = 0;
  {
    store::RunStore db(dir / "runs.sqlite");
    id = db.create_run({.name = "run", .model_path = "m", .data_path = "d", .config_json = "{}", .out_dir = out});
    db.set_status(id, store::RunStatus::running);
  }
  Events events;
  StoreSync sync(events);
  sync.open(dir / "runs.sqlite");

  auto first = polled_checkpoints(sync, events);
  ASSERT_EQ(first.count(id), 1u) << "a run's checkpoints are read when it is first listed";
  EXPECT_TRUE(first[id].empty()) << "a running run offers only what its store records";
  EXPECT_EQ(polled_checkpoints(sync, events).count(id), 0u) << "nothing changed: nothing read again";

  store::RunStore(dir / "runs.sqlite").set_status(id, store::RunStatus::failed, "interrupted");
  auto after = polled_checkpoints(sync, events);
  ASSERT_EQ(after.count(id), 1u) << "the status change is read";
  ASSERT_EQ(after[id].size(), 1u);
  EXPECT_EQ(after[id][0].step, 2);
  EXPECT_EQ(after[id][0].path, out / "checkpoint-2");
}

TEST(StoreSync, RecordedCheckpointsComeFirst) {
  test::TempDir dir;
  const fs::path out = dir / "run";
  fs::create_directories(out / "checkpoint-6");
  test::write_text(out / "checkpoint-6" / "trainer_state.json", R"({"step": 6, "data": {}})");
  int64_t id = 0;
  {
    store::RunStore db(dir / "runs.sqlite");
    id = db.create_run({.name = "run", .model_path = "m", .data_path = "d", .config_json = "{}", .out_dir = out});
    db.set_status(id, store::RunStatus::running);
    db.add_checkpoint(id, 3, out / "checkpoint-3");
    db.set_status(id, store::RunStatus::stopped);
  }
  Events events;
  StoreSync sync(events);
  sync.open(dir / "runs.sqlite");
  auto got = polled_checkpoints(sync, events);
  ASSERT_EQ(got[id].size(), 1u);
  EXPECT_EQ(got[id][0].step, 3) << "the store's list, not the folder's";
}

}  // namespace
}  // namespace ls::ui
