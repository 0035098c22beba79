// Placeholder: not written yet.
#include <iostream>
int main() { std::cout << "not written yet\n"; return 0; }
