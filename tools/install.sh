#!/bin/sh
# tools/install.sh BUILD PREFIX: what `ninja install` does. Installs the
# headers, the core, model and distribution libraries, the plugins, the
# tools, the bundled model (share/rt, where the tools look without -m) and
# pkg-config files under $DESTDIR$PREFIX (PREFIX from the environment
# overrides configure's).
set -eu
b=$1
prefix=${PREFIX:-$2}
dest=${DESTDIR:-}$prefix
ver=$(sed -n 's/^#define RT_VERSION_STRING "\(.*\)"/\1/p' abi/rt_version.h)

install -d "$dest/include/rt" "$dest/lib/rt-plugins" "$dest/lib/pkgconfig" "$dest/bin" "$dest/share/rt"
install -m 644 models/stories260K.gguf "$dest/share/rt/"
install -m 644 abi/*.h "$dest/include/rt/"
# In the tree the model header reaches the core's through ../abi/.
sed 's|"\.\./abi/rt\.h"|"rt.h"|' model/rt_model.h > "$dest/include/rt/rt_model.h"
# The distribution layer's headers reach the others through ../model/ and ../abi/.
for h in rt_dist.h rt_comm.h; do
    sed 's|"\.\./model/rt_model\.h"|"rt_model.h"|; s|"\.\./abi/rt\.h"|"rt.h"|' "dist/$h" > "$dest/include/rt/$h"
done
install -m 755 "$b/lib/librtcore.so.1" "$b/lib/librtmodel.so.0" "$b/lib/librtdist.so.0" "$dest/lib/"
ln -sf librtcore.so.1 "$dest/lib/librtcore.so"
ln -sf librtmodel.so.0 "$dest/lib/librtmodel.so"
ln -sf librtdist.so.0 "$dest/lib/librtdist.so"
for p in "$b"/lib/rt-plugins/rt-plugin-*.so "$b"/lib/rt-plugins/rt-plugin-*.dylib; do
    [ -e "$p" ] && install -m 755 "$p" "$dest/lib/rt-plugins/"
done
for t in "$b"/bin/rt-*; do
    [ -e "$t" ] && install -m 755 "$t" "$dest/bin/"
done
cat > "$dest/lib/pkgconfig/rt.pc" <<EOF2
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include/rt
plugindir=\${libdir}/rt-plugins

Name: rt
Description: GPU-first compute runtime with a stable plugin ABI
Version: $ver
Libs: -L\${libdir} -lrtcore
Cflags: -I\${includedir}
EOF2
cat > "$dest/lib/pkgconfig/rtmodel.pc" <<EOF2
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include/rt

Name: rtmodel
Description: rt's model layer: GGUF llama models, tokenizers, sampling
Version: $ver
Requires: rt
Libs: -L\${libdir} -lrtmodel
Cflags: -I\${includedir}
EOF2
echo "installed rt $ver into $dest"
