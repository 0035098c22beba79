#include "textbook/display.hpp"

namespace textbook {

// ---------------------------------------------------------------- chapters 1-6 and appendix A

// ---------------------------------------------------------------- (separator: keep)

// ---------------------------------------------------------------- chapters 7-10

}  // namespace textbook
