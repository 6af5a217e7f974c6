// The build's own paths, in one small file: the only test object that changes
// with the clone's folder, so ccache serves every other one from a build in
// another folder (CI builds a fresh clone each time).
namespace vpipe::test {
extern const char* const kBuiltinBin;
extern const char* const kBuiltinMediaDir;
extern const char* const kBuiltinSourceDir;
const char* const kBuiltinBin = VPIPE_BIN;
const char* const kBuiltinMediaDir = VPIPE_MEDIA_DIR;
const char* const kBuiltinSourceDir = VPIPE_SOURCE_DIR;
}  // namespace vpipe::test
