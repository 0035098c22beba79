// The main of one program of this folder: calls the program's own `main`, compiled as
// BOOK_MAIN (`book_main_<name>`) in the folder's unity file (see meson.build).
int BOOK_MAIN(int argc, char** argv);

int main(int argc, char** argv) { return BOOK_MAIN(argc, argv); }
