// The batch journal: a torn final line (a write cut short by a crash) is removed on restart,
// complete records say which custom_ids / lines are done, and a file that is not a journal is
// refused rather than appended to.
#include "batch/batch_journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace weft {
namespace {

class BatchJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_journal_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void write(const std::filesystem::path& p, const std::string& s) {
    std::ofstream(p, std::ios::binary) << s;
  }
  static std::string read(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::filesystem::path dir_;
};

TEST_F(BatchJournalTest, MissingFilesAreEmpty) {
  auto state = scan_journal(dir_ / "out.jsonl", dir_ / "err.jsonl");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_TRUE(state->done_ids.empty());
  EXPECT_TRUE(state->done_lines.empty());
}

TEST_F(BatchJournalTest, TornTailIsTruncatedAndDoneSetsAreRead) {
  const std::string good = "{\"custom_id\":\"a\"}\n{\"custom_id\":\"b\"}\n";
  const std::string torn_out = "{\"custom_id\":\"c\",\"resp", torn_err = "{\"cus";
  write(dir_ / "out.jsonl", good + torn_out);
  write(dir_ / "err.jsonl", "{\"custom_id\":null,\"line\":4}\n{\"custom_id\":\"d\",\"line\":9}\n" + torn_err);
  auto state = scan_journal(dir_ / "out.jsonl", dir_ / "err.jsonl");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->done_ids, (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(state->done_lines, (std::set<int64_t>{4, 9}));
  EXPECT_EQ(state->torn_bytes, static_cast<int64_t>(torn_out.size() + torn_err.size()));
  EXPECT_EQ(read(dir_ / "out.jsonl"), good);

  // Appending after the repair continues on a clean line boundary.
  auto file = RecordFile::open(dir_ / "out.jsonl");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->append("{\"custom_id\":\"c\"}\n").ok());
  auto again = scan_journal(dir_ / "out.jsonl", "");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->done_ids, (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(again->torn_bytes, 0);
}

TEST_F(BatchJournalTest, RefusesAFileThatIsNotAJournal) {
  write(dir_ / "out.jsonl", "{\"custom_id\":\"a\"}\nhello world\n");
  auto state = scan_journal(dir_ / "out.jsonl", "");
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.status().message().find("line 2"), std::string::npos) << state.status();
}

}  // namespace
}  // namespace weft
