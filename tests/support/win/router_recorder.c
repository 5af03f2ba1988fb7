/* A stand-in for llama-server.exe in router mode under Wine: what run_qwen.bat gave it, and what it can open.
 *
 * Writes record.txt beside itself (UTF-8), one fact a line:
 *   "arg=<argument>"     every argv entry as the C runtime split the command line (argv[0] included);
 *   "cwd=<folder>"       the working directory it was started in (the router's children inherit it);
 *   "env NAME=VALUE"     every variable whose name starts with LLAMA_ (any case, as Windows' getenv matches);
 *   "open <path>=ok|no"  whether the file after --models-preset and --api-key-file opens from the working
 *                        directory, and then every "model = " and "mmproj = " value of that preset (what each
 *                        child server opens, relative to the same folder);
 *   "home=<QWENKIT_HOME>".
 * Exits with the number in QK_EXIT (0 when unset).
 * Built by tests/render/test_router_bat_under_wine.py with mingw-w64 (x86_64-w64-mingw32-gcc -municode).
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static void put_utf8(FILE *f, const wchar_t *text) {
    static char buf[65536];
    int n = WideCharToMultiByte(CP_UTF8, 0, text, -1, buf, (int)sizeof buf, NULL, NULL);
    if (n > 0) fputs(buf, f);
}

static int opens(const wchar_t *path) {
    FILE *g = _wfopen(path, L"rb");
    if (g == NULL) return 0;
    fclose(g);
    return 1;
}

static void put_open(FILE *f, const wchar_t *path) {
    fputs("open ", f);
    put_utf8(f, path);
    fputs(opens(path) ? "=ok\n" : "=no\n", f);
}

/* Each "model = X" / "mmproj = X" line of the preset (UTF-8, CRLF or LF): does X open? */
static void check_preset(FILE *f, const wchar_t *preset) {
    static const char *keys[] = {"model = ", "mmproj = "};
    char line[8192];
    wchar_t wide[8192];
    FILE *p = _wfopen(preset, L"rb");
    if (p == NULL) return;
    while (fgets(line, sizeof line, p) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            size_t len = strlen(keys[k]);
            if (strncmp(line, keys[k], len) == 0
                    && MultiByteToWideChar(CP_UTF8, 0, line + len, -1, wide, 8192) > 0) {
                put_open(f, wide);
            }
        }
    }
    fclose(p);
}

int wmain(int argc, wchar_t **argv) {
    wchar_t path[32768];
    DWORD n = GetModuleFileNameW(NULL, path, 32768 - 16);
    wchar_t *slash = wcsrchr(path, L'\\');
    if (n == 0 || slash == NULL) return 98;
    wcscpy(slash + 1, L"record.txt");
    FILE *f = _wfopen(path, L"wb");
    if (f == NULL) return 99;
    for (int i = 0; i < argc; i++) {
        fputs("arg=", f);
        put_utf8(f, argv[i]);
        fputs("\n", f);
    }
    wchar_t cwd[32768];
    if (GetCurrentDirectoryW(32768, cwd) > 0) {
        fputs("cwd=", f);
        put_utf8(f, cwd);
        fputs("\n", f);
    }
    wchar_t *block = GetEnvironmentStringsW();
    for (wchar_t *var = block; var != NULL && *var != L'\0'; var += wcslen(var) + 1) {
        if (_wcsnicmp(var, L"LLAMA_", 6) == 0) {
            fputs("env ", f);
            put_utf8(f, var);
            fputs("\n", f);
        }
    }
    if (block != NULL) FreeEnvironmentStringsW(block);
    for (int i = 1; i + 1 < argc; i++) {
        if (wcscmp(argv[i], L"--api-key-file") == 0) put_open(f, argv[i + 1]);
    }
    for (int i = 1; i + 1 < argc; i++) {
        if (wcscmp(argv[i], L"--models-preset") == 0) {
            put_open(f, argv[i + 1]);
            check_preset(f, argv[i + 1]);
        }
    }
    const wchar_t *home = _wgetenv(L"QWENKIT_HOME");
    fputs("home=", f);
    put_utf8(f, home ? home : L"");
    fputs("\n", f);
    fclose(f);
    const wchar_t *code = _wgetenv(L"QK_EXIT");
    return code ? _wtoi(code) : 0;
}
