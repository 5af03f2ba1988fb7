/* A stand-in for llama-server.exe under Wine: what a start script passed it, written where a test can read it.
 *
 * Writes record.txt beside itself (UTF-8): one "arg=<argument>" line per argv entry as the C runtime split the
 * command line, then "env NAME=set|unset" for the variables run_qwen.bat must clear and "home=<QWENKIT_HOME>" (the
 * qwenkit.cmd launcher sets it). Exits with the number in
 * QK_EXIT (0 when unset), so a test can check the script passes the server's exit status on.
 * Built by tests/support/wine.py with mingw-w64 (x86_64-w64-mingw32-gcc -municode).
 */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

static void put_utf8(FILE *f, const wchar_t *text) {
    char buf[32768];
    int n = WideCharToMultiByte(CP_UTF8, 0, text, -1, buf, (int)sizeof buf, NULL, NULL);
    if (n > 0) fputs(buf, f);
}

int wmain(int argc, wchar_t **argv) {
    static const wchar_t *watched[] = {L"LLAMA_API_KEY", L"LLAMA_ARG_CTX_SIZE", L"LLAMA_ARG_ENDPOINT_METRICS"};
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
    for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++) {
        fputs("env ", f);
        put_utf8(f, watched[i]);
        fputs(_wgetenv(watched[i]) ? "=set\n" : "=unset\n", f);
    }
    const wchar_t *home = _wgetenv(L"QWENKIT_HOME");
    fputs("home=", f);
    put_utf8(f, home ? home : L"");
    fputs("\n", f);
    fclose(f);
    const wchar_t *code = _wgetenv(L"QK_EXIT");
    return code ? _wtoi(code) : 0;
}
