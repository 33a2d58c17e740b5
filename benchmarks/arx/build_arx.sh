#!/usr/bin/env bash
# Build ARX (arx-deidentifier/arx) from source with plain javac (no Maven Central needed),
# then compile the harnesses of this folder (ArxSetup, ArxBench, ArxRisk) against it.
#
#   ARX_SRC=path/to/arx-checkout  bash build_arx.sh
#
# ARX_SRC: a work tree of github.com/arx-deidentifier/arx (built here: aacd487fb77b, = v3.9.2 + 6
#          commits, master 2025-09-12). Its lib/ant/ folders carry the dependency jars.
# BUILD:   output folder (default: build, relative to this script's folder).
#
# Three jars of lib/ant were missing from the snapshot we had (hadoop-core-1.2.1, pdfbox-app-2.0.1,
# poi-ooxml-schemas-3.10); if they are missing in yours too, this script
#   * downloads Debian's libpdfbox2-java / libfontbox2-java / libcommons-logging-java .debs with
#     `apt-get download` and uses their jars instead of pdfbox-app-2.0.1 (only the PDF certificate
#     code needs them, at compile time);
#   * compiles a stub of org.apache.hadoop.io.Writable (mahout's logistic regression, used only by
#     ARX's classification analysis, implements it; nothing in anonymization touches it);
#   * leaves out poi-ooxml-schemas (only .xlsx import would need it at run time).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
: "${ARX_SRC:?set ARX_SRC to an ARX source tree}"
ARX_SRC=$(cd "$ARX_SRC" && pwd)
BUILD=${BUILD:-$HERE/build}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)

CP=$(find "$ARX_SRC/lib/ant" -name '*.jar' | grep -v -e swt -e eclipse -e jhc | sort | tr '\n' ':')
if [ ! -f "$ARX_SRC/lib/ant/pdfbox/pdfbox-app-2.0.1.jar" ]; then
  mkdir -p "$BUILD/debs"
  (cd "$BUILD/debs" && for p in libpdfbox2-java libfontbox2-java libcommons-logging-java; do
     ls ${p}_*.deb >/dev/null 2>&1 || apt-get download "$p"; done
   for d in *.deb; do dpkg -x "$d" x; done)
  J=$BUILD/debs/x/usr/share/java
  CP="$CP$J/pdfbox2.jar:$J/fontbox2.jar:$J/commons-logging-1.2.jar:"
fi
STUB=""
if [ ! -f "$ARX_SRC/lib/ant/mahout/hadoop-core-1.2.1.jar" ]; then
  mkdir -p "$BUILD/stub/org/apache/hadoop/io"
  cat > "$BUILD/stub/org/apache/hadoop/io/Writable.java" <<'EOF'
package org.apache.hadoop.io;
/** Compile-time stub of Hadoop's Writable (hadoop-core-1.2.1.jar is missing from the ARX snapshot). */
public interface Writable {
    void write(java.io.DataOutput out) throws java.io.IOException;
    void readFields(java.io.DataInput in) throws java.io.IOException;
}
EOF
  STUB="$BUILD/stub/org/apache/hadoop/io/Writable.java"
fi

rm -rf "$BUILD/classes" && mkdir -p "$BUILD/classes"
find "$ARX_SRC/src/main" -name '*.java' > "$BUILD/sources.txt"
echo "compiling $(wc -l < "$BUILD/sources.txt") ARX sources"
javac -nowarn -encoding UTF-8 -d "$BUILD/classes" -cp "$CP" @"$BUILD/sources.txt" $STUB 2>&1 | grep -v '^Note:' || true
(cd "$ARX_SRC/src/main" && find . -type f ! -name '*.java' -exec cp --parents {} "$BUILD/classes/" \;)
VERSION=$(sed -n 's/.*name="arx.version" value="\([^"]*\)".*/\1/p' "$ARX_SRC/build.xml")
jar cf "$BUILD/arx-$VERSION.jar" -C "$BUILD/classes" .
echo "$CP$BUILD/arx-$VERSION.jar" > "$BUILD/classpath.txt"

mkdir -p "$BUILD/bench"
javac -encoding UTF-8 -d "$BUILD/bench" -cp "$(cat "$BUILD/classpath.txt")" "$HERE/ArxSetup.java" "$HERE/ArxBench.java" "$HERE/ArxRisk.java"
echo "$(cat "$BUILD/classpath.txt"):$BUILD/bench" > "$BUILD/classpath.txt"
echo "built ARX $VERSION -> $BUILD/arx-$VERSION.jar; run: java -cp \"\$(cat $BUILD/classpath.txt)\" ArxBench serve"
